"""A model that raises: the run ends with an `error` event (with the traceback), the
trace is `failed`, the caller's process carries on, and no hook is left behind."""

import torch
from torch import nn

import hooktui
from hooktui import Session
from plain_hooks import hooks_left


class RaisesInForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.bad = Bad()

    def forward(self, x):
        return self.bad(self.fc(x))


class Bad(nn.Module):
    def forward(self, x):
        raise ValueError("bad shapes in Bad.forward")


class Explode(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        raise FloatingPointError("exploded in backward")


class ExplodesInBackward(nn.Module):
    def forward(self, x):
        return Explode.apply(x)


class RaisesInBackward(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 3)
        self.boom = ExplodesInBackward()
        self.fc2 = nn.Linear(3, 1)

    def forward(self, x):
        return self.fc2(self.boom(self.fc1(x)))


def _check_failed(trace, model, error_type, message):
    assert trace.failed and trace.state == "failed"
    last = trace.events[-1]
    assert last.hook == "error"
    assert sum(e.hook == "error" for e in trace.events) == 1
    assert last.error.type == error_type and message in last.error.message
    assert "Traceback (most recent call last)" in last.error.traceback and message in last.error.traceback
    assert any(message in note for note in last.notes)
    assert trace.error == last.error
    # The error takes the next number (numbers skip the legacy firings counted, engine/records/firing.py).
    indices = [e.index for e in trace.events]
    assert indices == sorted(set(indices))
    assert hooks_left(model) == []
    assert all(p.grad is None for p in model.parameters())


def test_raise_in_forward():
    torch.manual_seed(0)
    model = RaisesInForward()
    trace = hooktui.record(model, torch.ones(2, 3))
    _check_failed(trace, model, "ValueError", "bad shapes in Bad.forward")
    last = trace.events[-1]
    assert (last.phase, last.module, last.module_type) == ("forward", "bad", "Bad")
    assert "forward" in last.error.traceback
    # Every event before the error is a forward one; `bad` got its forward_pre only.
    assert [e.hook for e in trace.events if e.module == "bad"] == ["forward_pre", "error"]
    assert all(e.phase == "forward" for e in trace.events)


def test_raise_in_backward_custom_function():
    torch.manual_seed(0)
    model = RaisesInBackward()
    trace = hooktui.record(model, torch.ones(2, 3))
    _check_failed(trace, model, "FloatingPointError", "exploded in backward")
    last = trace.events[-1]
    assert last.phase == "backward" and last.module == "boom"
    hooks = [(e.hook, e.module) for e in trace.events if e.phase == "backward"]
    assert ("backward_pre", "boom") in hooks and ("backward", "fc1") not in hooks and ("backward_pre", "fc1") not in hooks


def test_raise_in_a_user_tensor_hook_during_backward():
    torch.manual_seed(0)

    class HookedModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(3, 3)
            self.fc2 = nn.Linear(3, 1)

        def forward(self, x):
            h = self.fc1(x)
            h.register_hook(self._check)
            return self.fc2(h)

        @staticmethod
        def _check(grad):
            raise RuntimeError("grad check failed")

    model = HookedModel()
    trace = hooktui.record(model, torch.ones(2, 3))
    _check_failed(trace, model, "RuntimeError", "grad check failed")
    assert trace.events[-1].phase == "backward"


def test_raise_in_loss_fn():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 1))

    def loss_fn(out):
        raise KeyError("logits")

    trace = hooktui.record(model, torch.ones(2, 3), loss_fn)
    _check_failed(trace, model, "KeyError", "logits")


def test_loss_fn_returning_a_non_tensor_or_a_vector():
    model = nn.Sequential(nn.Linear(3, 2))
    trace = hooktui.record(model, torch.ones(2, 3), lambda out: 1.5)
    _check_failed(trace, model, "TypeError", "the loss must be a tensor")
    trace = hooktui.record(model, torch.ones(2, 3), lambda out: out)
    _check_failed(trace, model, "ValueError", "single number")


def test_the_model_works_after_a_failure_and_a_session_can_run_again():
    torch.manual_seed(0)
    model = RaisesInBackward()
    assert hooktui.record(model, torch.ones(2, 3)).failed
    model.boom = nn.Identity()
    states = []
    trace = Session(model, torch.ones(2, 3), pause=False).run(on_state=states.append)
    assert trace.state == "finished" and states == ["running", "finished"]
    assert not any(e.hook == "error" for e in trace.events)
    assert hooks_left(model) == []


def test_error_event_reaches_on_event_and_state_goes_to_failed():
    torch.manual_seed(0)
    model = RaisesInForward()
    seen, states = [], []
    Session(model, torch.ones(2, 3), pause=False).run(on_event=seen.append, on_state=states.append)
    assert seen[-1].hook == "error"
    assert states == ["running", "failed"]


def test_keyboard_interrupt_like_base_exceptions_are_not_swallowed_as_model_errors():
    """A model's `except Exception` cannot swallow hooktui's quit (a BaseException)."""
    import threading

    class Swallows(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)

        def forward(self, x):
            try:
                return self.fc(x)
            except Exception:  # noqa: BLE001
                return x

    model = Swallows()
    session = Session(model, torch.ones(1, 2), pause=True)
    paused = threading.Event()
    thread = threading.Thread(target=session.run, kwargs={"on_state": lambda s: s == "paused" and paused.set()})
    thread.start()
    assert paused.wait(60)
    paused.clear()
    session.step()
    assert paused.wait(60)  # paused inside fc, under the model's try/except
    session.quit()
    thread.join(60)
    assert not thread.is_alive() and session.state == "quit"
    assert hooks_left(model) == []


class Checkpointed(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Sequential(nn.Linear(3, 4), nn.Tanh())
        self.b = nn.Linear(4, 1)

    def forward(self, x):
        from torch.utils.checkpoint import checkpoint

        return self.b(checkpoint(self.a, x, use_reentrant=False))


def test_activation_checkpointing_traces_and_its_recompute_shows_in_backward():
    """Reading a node's saved tensors would run checkpoint's unpack hook (a recompute)
    and make backward's own unpack fail; hooktui must leave them packed."""
    torch.manual_seed(0)
    model = Checkpointed()
    x = torch.ones(2, 3)
    trace = hooktui.record(model, x)
    assert trace.state == "finished", trace.error
    # The recompute re-runs a's forward hooks during backward, as plain hooks see it.
    recompute = [(e.hook, e.module, e.call) for e in trace.events if e.phase == "backward" and e.hook.startswith("forward")]
    assert ("forward_pre", "a", 1) in recompute
    # grad_output of `a` equals a tensor hook's on an identical, untraced copy.
    torch.manual_seed(0)
    plain = Checkpointed()
    seen = {}

    def on_a(module, args, out):
        if "a" not in seen:
            seen["a"] = out
            out.register_hook(lambda g: seen.__setitem__("grad", g))

    plain.a.register_forward_hook(on_a)
    plain(x).sum().backward()
    pre = next(e for e in trace.events if (e.hook, e.module, e.call) == ("backward_pre", "a", 0))
    assert torch.allclose(torch.tensor(pre.tensors[0].values).reshape(2, 4), seen["grad"])
    assert hooks_left(model) == []


class RaisesAfterChild(nn.Module):
    """The parent raises after its child returned: the last firing is the child's, but the
    error happened in the parent."""

    def __init__(self):
        super().__init__()
        self.child = nn.Linear(3, 3)

    def forward(self, x):
        self.child(x)
        raise KeyError("parent failed after child")


def test_error_names_the_call_it_was_raised_in_not_the_last_firing():
    outer = nn.Sequential(RaisesAfterChild())
    trace = hooktui.record(outer, torch.ones(2, 3))
    assert trace.failed
    before = trace.events[-2]
    assert (before.hook, before.module) == ("forward", "0.child")
    last = trace.events[-1]
    assert (last.hook, last.module, last.module_type, last.call) == ("error", "0", "RaisesAfterChild", 0)
