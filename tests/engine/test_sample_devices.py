"""Every sample model runs on a device other than the CPU (`--device cuda`), checked without
a GPU: loaded as `hooktui` loads it, moved to `meta` as `--device` moves it, recorded under
a mode that fails on any torch call mixing devices (one_device.py)."""

import pytest
import torch
from torch import nn

import hooktui
from hooktui.engine.run.inputs import map_tensors
from hooktui.engine.run.loader import load_target
from one_device import DeviceMismatch, OneDevice
from plain_hooks import SAMPLES

ALL = sorted(SAMPLES.glob("*.py"))


def _on_meta(target):
    loaded = load_target(target)
    loaded.model.to("meta")
    loaded.inputs = map_tensors(loaded.inputs, lambda t: t.to("meta"))
    return loaded


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_sample_model_runs_on_another_device(path):
    loaded = _on_meta(path)
    with OneDevice():
        trace = hooktui.record(loaded.model, loaded.inputs, loaded.loss_fn)
    assert trace.error is None, f"{trace.error.type}: {trace.error.message}"
    assert trace.state == "finished"
    assert trace.info.device == "meta"
    assert any(e.hook == "backward" for e in trace.events)


class _MakesCpuTensors(nn.Module):
    """The two mistakes the check is for: a hidden state and a mask made on the CPU."""

    def __init__(self, where: str) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.where = where

    def forward(self, x):
        if self.where == "forward-matmul":  # meta's own mm kernel accepts a CPU operand
            return self.fc(x) @ torch.eye(4)
        if self.where == "forward-add":
            return self.fc(x) + torch.zeros(x.shape[0], 4)
        return self.fc(x)


@pytest.mark.parametrize("where", ["forward-matmul", "forward-add", "loss"])
def test_a_tensor_made_on_the_cpu_is_caught(where):
    model = _MakesCpuTensors(where).to("meta")
    x = torch.randn(2, 4).to("meta")

    def loss_fn(output):
        if where == "loss":
            return nn.functional.cross_entropy(output, torch.tensor([0, 3]))
        return output.sum()

    with OneDevice():
        trace = hooktui.record(model, x, loss_fn)
    assert trace.failed and trace.error.type == DeviceMismatch.__name__, trace.error
    assert "cpu" in trace.error.message and "meta" in trace.error.message
    # The same model with its tensors on the model's device passes the check.
    assert not _fixed(where).failed


def _fixed(where: str):
    class Fixed(_MakesCpuTensors):
        def forward(self, x):
            if self.where == "forward-matmul":
                return self.fc(x) @ torch.eye(4, device=x.device)
            if self.where == "forward-add":
                return self.fc(x) + torch.zeros(x.shape[0], 4, device=x.device)
            return self.fc(x)

    model, x = Fixed(where).to("meta"), torch.randn(2, 4).to("meta")
    with OneDevice():
        return hooktui.record(model, x, lambda out: nn.functional.cross_entropy(out, torch.tensor([0, 3], device=out.device)))
