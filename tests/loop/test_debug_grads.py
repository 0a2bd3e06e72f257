"""`hooktui.debug` is a real training step: afterwards `.grad` and the buffers are exactly
what a plain `loss.backward()` leaves (also onto gradients already there, and under
autocast), whether the step ran in the app (on a worker thread) or was recorded (no
terminal); and nothing of hooktui stays on the model."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

import hooktui
import hooktui.loop.where
from loop_helpers import assert_same_state, batch, continue_then_quit, hook_dicts, net_and_twin, tensor_hooks, use_pilot

CASES = ["fresh", "accumulated", "autocast_bf16", "eval"]
# Through the app (a worker thread) for the cases where threads could differ; every case recorded.
APP_CASES = ("accumulated", "autocast_bf16")


def _setup(monkeypatch, path: str) -> None:
    if path == "app":
        use_pilot(monkeypatch, continue_then_quit)
    else:
        monkeypatch.setattr(hooktui.loop.where, "terminal_attached", lambda: False)


def _autocast(case: str):
    return torch.autocast("cpu", dtype=torch.bfloat16) if case == "autocast_bf16" else torch.autocast("cpu", enabled=False)


@pytest.mark.parametrize(
    "path,case", [("app", c) for c in APP_CASES] + [("record", c) for c in CASES]
)
def test_grads_and_buffers_equal_a_plain_step(monkeypatch, path, case):
    _setup(monkeypatch, path)
    net, twin = net_and_twin()
    x, y = batch()
    if case == "accumulated":  # gradient accumulation: the previous micro-batch's grads are there
        for model in (net, twin):
            torch.manual_seed(3)
            F.cross_entropy(model(batch(2)[0]), batch(2)[1]).backward()
    if case == "eval":
        net.eval(), twin.eval()
    hooks_before, tensor_hooks_before = hook_dicts(net), tensor_hooks(net)
    grads_before = {n: p.grad for n, p in net.named_parameters()}

    with _autocast(case):
        torch.manual_seed(5)
        expected = F.cross_entropy(twin(x), y)
        expected.backward()
    with _autocast(case):
        torch.manual_seed(5)
        loss = hooktui.debug(net, lambda: F.cross_entropy(net(x), y))

    assert torch.equal(loss, expected.detach())
    assert loss.grad_fn is None  # backward has run: the loss comes back detached
    assert_same_state(net, twin)
    if case == "accumulated":  # accumulated in place, as AccumulateGrad does
        assert all(p.grad is grads_before[n] for n, p in net.named_parameters())
    assert net.training == twin.training and all(m.training == t.training for m, t in zip(net.modules(), twin.modules()))
    # No hook of hooktui's left; the model's own hook is its original function again.
    assert [(n, a, k, f) for n, a, k, f in hook_dicts(net)] == hooks_before
    assert tensor_hooks(net) == tensor_hooks_before
    assert net.seen == twin.seen  # the model's own hook ran once per forward, as in plain torch


def test_autocast_outside_reaches_the_worker_thread(monkeypatch):
    """The app runs the step on another thread: autocast set around `debug` must still apply
    there (torch keeps it per thread). bf16 autocast changes the loss, so equality with the
    plain autocast step and inequality with a float32 step tell them apart."""
    use_pilot(monkeypatch, continue_then_quit)
    net, twin = net_and_twin()
    net.eval(), twin.eval()  # no dropout: the float32 reference draws nothing
    x, y = batch()
    with torch.no_grad():
        float32 = F.cross_entropy(twin(x), y)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = hooktui.debug(net, lambda: F.cross_entropy(net(x), y))
        reference = F.cross_entropy(twin(x), y)
    assert not torch.equal(float32, reference.detach())
    assert torch.equal(loss, reference.detach())


@pytest.mark.parametrize("path", ["app", "record"])
def test_inputs_and_loss_fn_style(monkeypatch, path):
    _setup(monkeypatch, path)
    net, twin = net_and_twin()
    x, y = batch()
    torch.manual_seed(5)
    F.cross_entropy(twin(x), y).backward()
    torch.manual_seed(5)
    loss = hooktui.debug(net, x, loss_fn=lambda out: F.cross_entropy(out, y))
    assert_same_state(net, twin)
    assert loss.ndim == 0


def test_no_grad_around_debug_fails_as_plain_backward_would(monkeypatch):
    monkeypatch.setattr(hooktui.loop.where, "terminal_attached", lambda: False)
    net, _ = net_and_twin()
    x, y = batch()
    with torch.no_grad(), pytest.raises(ValueError, match="does not require grad"):
        hooktui.debug(net, lambda: F.cross_entropy(net(x), y))
    assert all(p.grad is None for p in net.parameters())
    assert hook_dicts(net) == [("fc2", "_forward_hooks", k, f) for k, f in net.fc2._forward_hooks.items()]
