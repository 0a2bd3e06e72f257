"""What the trainer callbacks' tests share: tiny data that makes a NaN on one batch only,
references from plain PyTorch hooks, and the app of `hooktui.debug` driven by Textual's pilot
(tests/loop/loop_helpers.py)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "loop"))

from loop_helpers import continue_then_quit, hook_dicts, quit_at_first_pause, tensor_hooks, use_pilot, wait_for  # noqa: E402,F401

from hooktui.engine.records.trace_file import read_trace_file  # noqa: E402

BATCH = 4
STEPS = 3


def features(poisoned_batch: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Positive inputs (a log of them is finite) and labels; with `poisoned_batch`, one value
    of that batch is negative: its log is NaN, born in the model's `log` module."""
    generator = torch.Generator().manual_seed(3)
    x = torch.rand(BATCH * STEPS, 6, generator=generator) + 0.5
    y = torch.randint(0, 3, (BATCH * STEPS,), generator=generator)
    if poisoned_batch is not None:
        x[poisoned_batch * BATCH + 1, 2] = -1.0
    return x, y


class Log(nn.Module):
    def forward(self, x):
        return torch.log(x)  # where the NaN is born


def layers() -> nn.Module:
    """log, then two Linear layers with Dropout between (random numbers drawn in the step)."""
    return nn.ModuleDict({"log": Log(), "fc1": nn.Linear(6, 8), "drop": nn.Dropout(0.25), "fc2": nn.Linear(8, 3)})


def forward(net: nn.ModuleDict, x: torch.Tensor) -> torch.Tensor:
    return net["fc2"](net["drop"](torch.relu(net["fc1"](net["log"](x)))))


def line_of(text: str) -> str:
    """file:line of `text` in this file (where the test expects hooktui to say it was born)."""
    lines = Path(__file__).read_text().splitlines()
    number = next(i for i, line in enumerate(lines, 1) if text in line)
    return f"{Path(__file__).name}:{number}"


class PlainHooks:
    """fc1's forward output and grad_output at each training step, and whether log's output
    was finite, from PyTorch's own hooks (nothing of hooktui's): the reference a recorded
    step's values, and a guard's step, are compared with."""

    def __init__(self, net: nn.ModuleDict) -> None:
        self.outputs: list[torch.Tensor] = []
        self.grad_outputs: list[torch.Tensor] = []
        self.log_finite: list[bool] = []
        net["fc1"].register_forward_hook(lambda m, a, out: self.outputs.append(out.detach().clone()))
        net["fc1"].register_full_backward_hook(lambda m, gi, go: self.grad_outputs.append(go[0].detach().clone()))
        net["log"].register_forward_hook(lambda m, a, out: self.log_finite.append(bool(torch.isfinite(out).all())))


def step_files(folder) -> dict[int, Path]:
    """The trace files a callback wrote (in a folder, or those given), by the step their names say."""
    found = {}
    for path in folder.glob("*.jsonl") if isinstance(folder, Path) else folder:
        match = re.fullmatch(r"hooktui-\d+-\d+-step(\d+)\.jsonl", path.name)
        assert match, f"an unexpected file: {path.name}"
        found[int(match.group(1))] = path
    return found


def assert_recorded_as_plain_hooks_saw(path: Path, fc1: str, output: torch.Tensor, grad_output: torch.Tensor) -> None:
    """The recorded step's fc1 (named `fc1` in the trace) forward output and backward
    grad_output hold exactly the values PyTorch's hooks were handed at that step."""
    trace = read_trace_file(path)
    forward = [e for e in trace.events if e.hook == "forward" and e.module == fc1]
    backward = [e for e in trace.events if e.hook == "backward_pre" and e.module == fc1]
    assert len(forward) == 1 and len(backward) == 1, [(e.hook, e.module) for e in trace.events]
    for record, expected in ((_tensor(forward[0], "output"), output), (_tensor(backward[0], "grad_output"), grad_output)):
        assert record.values_complete and record.shape == list(expected.shape)
        values = torch.tensor(record.values, dtype=expected.dtype).reshape(expected.shape)
        assert torch.equal(values, expected), (record.name, values, expected)


def _tensor(event, prefix: str):
    found = [t for t in event.tensors if t.name.startswith(prefix)]
    assert len(found) == 1, [t.name for t in event.tensors]
    return found[0]


def assert_same_parameters(model: nn.Module, twin: nn.Module) -> None:
    for (name, p), (_, q) in zip(model.named_parameters(), twin.named_parameters(), strict=True):
        assert torch.equal(p, q), f"parameter {name} differs"


def assert_nothing_left(model: nn.Module) -> None:
    """No hook of hooktui's on any module or parameter once training is over."""
    assert hook_dicts(model) == []
    assert all(not backward and not accumulate for _, backward, accumulate in tensor_hooks(model))
