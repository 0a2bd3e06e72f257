"""What capture keeps while a backward runs: a call's backward state goes once its firings are
made, not when the autograd graph is freed. The hooks hooktui puts on the graph's nodes live as
long as the graph (PyTorch keeps a node's hooks until the node is freed), so whatever they
reach is kept to the end of the run unless they let it go; on a model of many small modules
that was ~4 KB a firing of `hooktui trace` without `--save` (README, "per-firing working
memory"). Checked structurally, by which objects are alive, never by timing or bytes."""

from __future__ import annotations

import weakref

import pytest
import torch
from torch import nn

from hooktui.engine.capture import tracer as tracer_module
from hooktui.engine.run.session import Session


_MADE: list[weakref.ref] = []


class _CountedPass(tracer_module._Pass):
    """One call's backward state (tracer._Pass), counted while it is alive."""

    __slots__ = ("__weakref__",)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        _MADE.append(weakref.ref(self))


@pytest.fixture
def counted_passes(monkeypatch):
    monkeypatch.setattr(tracer_module, "_Pass", _CountedPass)
    _MADE.clear()
    return lambda: sum(ref() is not None for ref in _MADE)


def test_a_calls_backward_state_goes_once_its_firings_are_made(counted_passes):
    torch.manual_seed(0)
    depth = 12
    model = nn.Sequential(*(nn.Sequential(nn.Linear(8, 8), nn.Tanh()) for _ in range(depth)))
    x = torch.randn(4, 8)
    alive_at_backward: list[int] = []

    def on_event(event) -> None:
        if event.hook == "backward":
            # Reference counting frees what nothing holds (the run freezes the collector's
            # objects, so nothing here depends on a collection).
            alive_at_backward.append(counted_passes())

    Session(model, x, pause=False, keep_events=False).run(on_event=on_event)
    calls = 1 + depth * 3  # the root, each block and its two layers
    assert len(alive_at_backward) == calls
    # Every call's state exists when the backward starts (each waits for its gradients).
    # Without letting go it stays until the graph is freed: all 37 alive at the last
    # backward firing. Letting go, the k-th backward firing finds the states of the calls
    # whose backward is still to come, the one firing now and the one before it (let go
    # once the firing after it has started).
    assert all(alive <= calls - k + 2 for k, alive in enumerate(alive_at_backward)), alive_at_backward
    assert alive_at_backward[-1] <= 3, alive_at_backward


@pytest.mark.parametrize("retain_graph", [False, True])
def test_the_backward_s_root_is_not_held_once_the_run_is_over(retain_graph):
    """A session that stays (the app's, `debug`'s) keeps nothing of the run's autograd graph:
    the loss it started from held would keep every node alive, with the hooks on them (and,
    with retain_graph, the activations the nodes saved) until the next run."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 1))
    x = torch.randn(4, 8)
    losses: list[weakref.ref] = []

    def step() -> torch.Tensor:
        loss = model(x).sum()
        losses.append(weakref.ref(loss))
        loss.backward(retain_graph=retain_graph)
        return loss.detach()

    session = Session(model, None, step=step, pause=False, keep_events=False)
    session.run()
    assert len(losses) == 1
    import gc

    gc.collect()
    assert losses[0]() is None, "the run's loss (and its graph) outlived the run"
    assert session is not None


def test_a_second_run_lets_the_first_run_s_final_grad_go_before_its_backward():
    """A session keeps the run's final .grad for the console; run again, it lets them go as
    the run starts, not once the new backward has made the next ones (two sets of a large
    model's gradients at once)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 1))
    session = Session(model, torch.randn(2, 4), pause=False, keep_events=False)
    session.run()
    first = [weakref.ref(grad) for grad in session.final_grads.values()]
    assert len(first) == 4
    alive_at_backward: list[int] = []

    def on_event(event) -> None:
        if event.phase == "backward" and not alive_at_backward:
            alive_at_backward.append(sum(ref() is not None for ref in first))

    session.run(on_event=on_event)
    assert alive_at_backward == [0]
    assert len(session.final_grads) == 4  # the second run's, for the console
