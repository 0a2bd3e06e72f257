"""Activation checkpointing: the recompute of a checkpointed module during backward is no
second use of its parameters, so its `param_grad` does not say "accumulated over the 2
calls"; a module really called twice still does. Checked against plain forward hooks and
.grad, with both checkpoint implementations, and under checkpoint_wrapper (names)."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
from torch.utils.checkpoint import checkpoint

import hooktui


class Net(nn.Module):
    def __init__(self, reentrant: bool) -> None:
        super().__init__()
        self.reentrant = reentrant
        # tanh saves its output, made inside the checkpoint: backward has to recompute it.
        self.first, self.saved, self.twice = nn.Linear(3, 4), nn.Sequential(nn.Linear(4, 4), nn.Tanh()), nn.Linear(4, 4)

    def forward(self, x):
        h = checkpoint(self.saved, torch.tanh(self.first(x)), use_reentrant=self.reentrant)
        return self.twice(torch.tanh(self.twice(h))).sum(-1)


def build(reentrant: bool) -> Net:
    torch.manual_seed(0)
    return Net(reentrant)


def plain_calls(model: nn.Module, x: torch.Tensor) -> tuple[dict, dict]:
    """Per module: its calls in the forward pass, and in the backward (recomputes)."""
    calls = {"forward": {}, "backward": {}}
    phase = ["forward"]
    for name, module in list(model.named_modules())[1:]:
        module.register_forward_hook(lambda m, a, o, n=name: calls[phase[0]].__setitem__(n, calls[phase[0]].get(n, 0) + 1))
    loss = model(x).sum()
    phase[0] = "backward"
    loss.backward()
    return calls["forward"], calls["backward"]


@pytest.mark.parametrize("reentrant", [False, True])
def test_a_checkpointed_modules_recompute_is_not_counted_as_a_call(reentrant):
    x = torch.randn(2, 3)
    plain = build(reentrant)
    forward, backward = plain_calls(plain, x)
    assert forward == {"first": 1, "saved": 1, "saved.0": 1, "saved.1": 1, "twice": 2}
    # Recomputed once (the non-reentrant one stops once it has what backward needs).
    assert backward.get("saved.0") == 1 and set(backward) <= {"saved", "saved.0", "saved.1"}

    trace = hooktui.record(build(reentrant), x, lambda out: out.sum())
    assert trace.error is None
    for name, param in plain.named_parameters():
        owner = name.rpartition(".")[0]
        (event,) = [e for e in trace.events if e.hook == "param_grad" and e.tensors[0].target == name]
        assert torch.equal(torch.tensor(event.tensors[0].values).reshape(param.shape), param.grad)
        accumulated = [n.partition(" of this module")[0] for n in event.notes if n.startswith("accumulated over")]
        expected = [f"accumulated over calls 0..{forward[owner] - 1}"] if forward[owner] > 1 else []
        assert accumulated == expected, name


def test_checkpoint_wrapper_leaves_the_models_names():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), checkpoint_wrapper(nn.Linear(4, 4)), nn.Linear(4, 1))
    plain_names = {name for name, _ in nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 4), nn.Linear(4, 1)).named_modules()}
    trace = hooktui.record(model, torch.randn(2, 3), lambda out: out.sum())
    assert {e.module for e in trace.events if e.module_type != "CheckpointWrapper"} == plain_names
    assert {e.module for e in trace.events if e.module_type == "CheckpointWrapper"} == {"1[CheckpointWrapper]"}
    raw = {m.name: m.raw_name for m in trace.info.modules}
    assert raw["1"] == "1._checkpoint_wrapped_module" and raw["1[CheckpointWrapper]"] == "1" and raw["0"] is None
    grads = {t.target for e in trace.events if e.hook == "param_grad" for t in e.tensors}
    assert grads == {"0.weight", "0.bias", "1.weight", "1.bias", "2.weight", "2.bias"}
    (event,) = [e for e in trace.events if e.hook == "param_grad" and e.tensors[0].target == "1.weight"]
    assert not [n for n in event.notes if n.startswith("accumulated over")]
