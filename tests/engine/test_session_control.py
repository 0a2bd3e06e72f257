"""A paused Session: step, resume to a breakpoint, and quit from another thread, in
forward and in backward. Quitting ends the worker promptly and leaves no hooks."""

import gc
import threading
import time

import pytest
import torch
from torch import nn

import hooktui
from hooktui import Session
from finishing import SAFETY_NET
from plain_hooks import MODULE_HOOKS, hooks_left, load_sample

load = load_sample


class Runner:
    def __init__(self, session: Session):
        self.session = session
        self.events = []
        self.states = []
        self.paused = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.result = None

    def _run(self):
        self.result = self.session.run(on_event=self.events.append, on_state=self._state)

    def _state(self, state):
        self.states.append(state)
        if state == "paused":
            self.paused.set()

    def start(self):
        self.thread.start()
        self.wait_paused()
        return self

    def wait_paused(self, timeout=SAFETY_NET):
        assert self.paused.wait(timeout), f"never paused (states {self.states})"
        self.paused.clear()
        deadline = time.monotonic() + timeout
        while not self.session.gate.paused:  # the worker is inside the wait
            assert time.monotonic() < deadline
            time.sleep(0.001)

    def step(self):
        self.session.step()
        self.wait_paused()


def seed_session():
    seed = load("seed")
    model = seed.build_model()
    return model, Session(model, seed.example_inputs(), pause=True)


def test_stepping_pauses_at_every_firing_in_order():
    model, session = seed_session()
    runner = Runner(session).start()
    expected = [e.hook for e in hooktui.record(load("seed").build_model(), load("seed").example_inputs()).events]
    seen = [runner.events[-1].hook]
    assert session.current is not None and session.current.event is runner.events[-1]
    for _ in range(len(expected) - 1):
        runner.step()
        seen.append(runner.events[-1].hook)
        assert session.state == "paused"
    assert seen == expected
    session.step()
    runner.thread.join(SAFETY_NET)
    assert not runner.thread.is_alive()
    assert session.state == "finished" and runner.states[-1] == "finished"
    assert hooks_left(model) == []


def test_live_tensors_while_paused():
    model, session = seed_session()
    runner = Runner(session).start()
    runner.step()
    runner.step()  # forward of fc1
    live = session.current
    assert live.event.hook == "forward" and live.module is model.fc1
    out = live.tensors["output"]
    # Compute on the live tensors from this thread (not through the hooked modules).
    x = load("seed").example_inputs()
    assert torch.equal(out, torch.nn.functional.linear(x, model.fc1.weight, model.fc1.bias))
    session.quit()
    runner.thread.join(SAFETY_NET)


@pytest.mark.parametrize("steps", [0, 3])
def test_quit_while_paused_in_forward(steps):
    model, session = seed_session()
    params = {n: p.detach().clone() for n, p in model.named_parameters()}
    runner = Runner(session).start()
    for _ in range(steps):
        runner.step()
    assert runner.events[-1].phase == "forward"
    session.quit()
    runner.thread.join(SAFETY_NET)  # it ends at once; the wait is only a safety net
    assert not runner.thread.is_alive()
    assert session.state == "quit" and runner.states[-1] == "quit"
    assert len(runner.events) == steps + 1  # nothing ran past the pause
    assert hooks_left(model) == []
    assert all(p.grad is None for p in model.parameters())
    assert all(torch.equal(p, params[n]) for n, p in model.named_parameters())


def test_quit_while_paused_in_backward_at_a_breakpoint():
    model, session = seed_session()
    runner = Runner(session).start()
    assert session.toggle_breakpoint("fc1", "backward") is True
    session.resume()
    runner.wait_paused()
    last = runner.events[-1]
    assert (last.phase, last.module, last.hook) == ("backward", "fc1", "backward_pre")
    assert session.current.node is not None  # live autograd node while paused
    session.quit()
    runner.thread.join(SAFETY_NET)  # it ends at once; the wait is only a safety net
    assert not runner.thread.is_alive()
    assert session.state == "quit"
    assert not any(e.hook == "error" for e in runner.events)
    assert hooks_left(model) == []
    assert all(p.grad is None for p in model.parameters())
    # The model still works, and PyTorch's own hooks can be put on it afterwards.
    calls = []
    model.fc2.register_full_backward_hook(lambda m, gi, go: calls.append(gi[0].shape))
    model(load("seed").example_inputs()).sum().backward()
    assert calls == [torch.Size([1, 1, 5])]


def test_quit_while_paused_in_a_later_backward_of_a_bigger_model():
    cnn = load("cnn")
    model = cnn.build_model()
    buffers = {n: b.clone() for n, b in model.named_buffers()}
    session = Session(model, cnn.example_inputs(), cnn.loss_fn, pause=True)
    runner = Runner(session).start()
    session.toggle_breakpoint("features.1", "backward")
    session.resume()
    runner.wait_paused()
    assert runner.events[-1].module == "features.1"
    while runner.events[-1].hook != "backward":  # its param_grad firings stop here too
        assert runner.events[-1].module == "features.1"
        session.resume()
        runner.wait_paused()
    session.quit()
    runner.thread.join(SAFETY_NET)
    assert not runner.thread.is_alive() and session.state == "quit"
    assert hooks_left(model) == []
    assert all(torch.equal(b, buffers[n]) for n, b in model.named_buffers())


def test_breakpoint_on_a_module_glob_and_resume_to_the_end():
    model, session = seed_session()
    runner = Runner(session).start()
    session.toggle_breakpoint("fc*", "forward")
    session.resume()
    runner.wait_paused()
    assert (runner.events[-1].module, runner.events[-1].hook) == ("fc1", "forward_pre")
    assert session.toggle_breakpoint("fc*", "forward") is False  # removed
    session.resume()
    runner.thread.join(SAFETY_NET)
    assert session.state == "finished"
    assert len([e for e in runner.events if e.hook in MODULE_HOOKS]) == 12
    assert len([e for e in runner.events if e.hook == "param_grad"]) == 4  # two Linears' weight and bias


def test_a_session_keeping_only_the_last_event_hands_over_every_firing_and_lets_them_go():
    """keep_events=False (`hooktui trace` without --save): the same firings reach on_event,
    and a firing's records are freed once the caller let go of it."""
    import weakref

    from hooktui.engine.records.records import LazyTensorRecord
    from hooktui.engine.summaries.stats import _RecentSummaries

    def build():
        torch.manual_seed(0)
        return nn.Sequential(*[nn.Linear(4, 4) for _ in range(80)])

    def plain(event) -> dict:
        data = event.to_dict()
        data["node"] = data["node"] and data["node"]["name"]  # sequence numbers go on from run to run
        return data

    x = torch.randn(3, 4)
    kept = Session(build(), x, pause=False).run().events
    seen, summaries = [], []

    def on_event(event):
        seen.append(plain(event))
        summaries.extend(weakref.ref(t._summary) for t in event.tensors if isinstance(t, LazyTensorRecord))

    trace = Session(build(), x, pause=False, keep_events=False).run(on_event=on_event)
    assert seen == [plain(e) for e in kept] and len(seen) > 10
    assert len(trace.events) == 1 and plain(trace.events[-1]) == seen[-1]
    gc.collect()
    alive = {id(ref()) for ref in summaries if ref() is not None}
    # What lives on: the last firing's, and the few a bounded cache of recent tensors keeps.
    assert len(set(map(id, summaries))) > 3 * _RecentSummaries.SIZE
    assert len(alive) <= _RecentSummaries.SIZE + len(trace.events[-1].tensors)
