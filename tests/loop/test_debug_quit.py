"""Leaving the app of `hooktui.debug`: `q` before the step ended raises hooktui.Quit in the
caller (or, with on_quit="return", lets the step finish and returns); the step's own
exception reaches the caller; a step inside a long forward is waited for, never killed."""

from __future__ import annotations

import threading
import time

import pytest
import torch
from torch import nn
from torch.nn import functional as F

import hooktui
import hooktui.loop.in_app
from loop_helpers import assert_same_state, batch, continue_then_quit, hook_dicts, net_and_twin, quit_at_first_pause, use_pilot, wait_for


def test_q_raises_quit_and_leaves_no_hook(monkeypatch):
    use_pilot(monkeypatch, quit_at_first_pause)
    net, _ = net_and_twin()
    x, y = batch()
    before = hook_dicts(net)
    with pytest.raises(hooktui.Quit) as caught:
        hooktui.debug(net, lambda: F.cross_entropy(net(x), y))
    assert isinstance(caught.value, SystemExit) and not isinstance(caught.value, Exception)
    assert "test_debug_quit.py" in str(caught.value.code)  # where the program called debug
    assert hook_dicts(net) == before
    assert all(p.grad is None for p in net.parameters())  # stopped in forward: no backward ran


def test_on_quit_return_finishes_the_step(monkeypatch):
    use_pilot(monkeypatch, quit_at_first_pause)
    net, twin = net_and_twin()
    x, y = batch()
    torch.manual_seed(5)
    expected = F.cross_entropy(twin(x), y)
    expected.backward()
    torch.manual_seed(5)
    loss = hooktui.debug(net, lambda: F.cross_entropy(net(x), y), on_quit="return")
    assert torch.equal(loss, expected.detach())
    assert_same_state(net, twin)


class Raises(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(2, 2)

    def forward(self, x):
        raise KeyError("no such column")


@pytest.mark.parametrize("path", ["app", "record"])
def test_the_steps_own_exception_reaches_the_caller(monkeypatch, path):
    if path == "app":
        shown = []

        async def script(pilot):
            app = pilot.app
            await wait_for(pilot, lambda: app.state == "paused", "the first pause")
            await pilot.press("c")
            await wait_for(pilot, lambda: app.state == "failed", "the failure")
            shown.append(app.history.error.error.type)
            await pilot.press("escape", "q")

        use_pilot(monkeypatch, script)
    else:
        monkeypatch.setattr(hooktui.loop.where, "terminal_attached", lambda: False)
    model = Raises()
    with pytest.raises(KeyError, match="no such column"):
        hooktui.debug(model, lambda: model(torch.ones(1, 2)).sum())
    if path == "app":
        assert shown == ["KeyError"]  # the app showed it before the caller got it


class SlowForward(nn.Module):
    """A forward that waits between its two module calls until `release` is set (the test
    sets it once the app was quit: however loaded the machine, the quit comes inside the
    wait), saying where it is: `slept` once the wait is over, `b_ran` if self.b's forward ran."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(2, 2), nn.Linear(2, 1)
        self.release = threading.Event()
        self.slept = threading.Event()
        self.b_ran = False
        self.b.register_forward_hook(self._b_ran)

    def _b_ran(self, module, args, output) -> None:
        self.b_ran = True

    def forward(self, x):
        h = self.a(x)
        self.release.wait(60)  # a long forward: nothing can stop the step before self.b
        self.slept.set()
        return self.b(h)


def test_quit_during_a_long_forward_waits_for_the_next_module_call(monkeypatch, capsys):
    """What happened, not how long it took: `q` came inside the long forward, `debug` returned
    only once the forward went on, and the step stopped at self.b's call (its forward never ran)."""
    monkeypatch.setattr(hooktui.loop.in_app, "WAIT_QUIETLY", 0.05)
    model = SlowForward()
    slept_at_quit = []

    async def script(pilot):
        app = pilot.app
        await wait_for(pilot, lambda: app.state == "paused", "the first pause")
        await pilot.press("c")
        await wait_for(pilot, lambda: app.state == "running" and len(app.history) >= 3, "the step inside the wait")
        slept_at_quit.append(model.slept.is_set())
        await pilot.press("q")
        threading.Timer(0.3, model.release.set).start()  # the forward goes on after the app closed

    use_pilot(monkeypatch, script)
    hooks_before = hook_dicts(model)  # the test's own forward hook on self.b
    with pytest.raises(hooktui.Quit):
        hooktui.debug(model, lambda: model(torch.ones(1, 2)).sum())
    assert slept_at_quit == [False]  # quit while the forward waited
    assert model.slept.is_set()  # debug waited for the step to leave the wait
    assert not model.b_ran  # and stopped it at its next module call
    assert "waiting for the step to reach its next module call" in capsys.readouterr().err
    assert model.b.weight.grad is None and hook_dicts(model) == hooks_before


def test_bad_arguments_are_refused_before_the_step_runs():
    net, _ = net_and_twin()
    ran = []
    with pytest.raises(ValueError, match="on_quit"):
        hooktui.debug(net, lambda: ran.append(1), on_quit="ignore")
    with pytest.raises(TypeError, match="loss_fn goes with inputs"):
        hooktui.debug(net, lambda: ran.append(1), loss_fn=lambda o: o)
    with pytest.raises(TypeError, match="nn.Module"):
        hooktui.debug(lambda: 1, net)
    assert ran == []


def test_the_last_step_s_app_is_collected_before_the_next_debug_step_runs(monkeypatch):
    """Each `hooktui.debug` call opens an app, closed when the step is done: garbage with
    cycles (its history, the snapshots of its last firings). The next call's run freezes the
    collector as it starts (engine/capture/collector.py): it must be gone by then, or each
    step runs beside the last step's app."""
    import weakref

    opened: list = []
    use_pilot(monkeypatch, continue_then_quit, opened)
    net, _ = net_and_twin()
    x, y = batch()
    first_alive: list[bool] = []

    def step():
        if len(opened) == 2:  # the second call's step: its run has started
            first_alive.append(first() is not None)
        return F.cross_entropy(net(x), y)

    hooktui.debug(net, step)
    first = weakref.ref(opened[0])
    opened.clear()
    opened.append(None)  # counted: the next app is the second
    hooktui.debug(net, step)
    assert first_alive == [False]
