"""record, debug and guard from several threads at once: the second thread is refused with
a clear error while the first thread's run goes on, and nothing of hooktui stays patched
(issue 24: wrappers left on torch.Tensor.register_hook, hooktui's internals as the user's
exception). Expectations: torch's own functions, looked up before any run."""

import threading

import pytest
import torch
from torch import nn

import hooktui
from hooktui.engine.run.one_run import ConcurrentRunError

ORIGINAL = {name: getattr(torch.Tensor, name) for name in ("register_hook", "register_post_accumulate_grad_hook")}
ORIGINAL_GRAD, ORIGINAL_BACKWARD = torch.autograd.grad, torch.autograd.backward


class Gate(nn.Module):
    """Holds its forward until told to go, so that the other thread tries while it runs."""

    def __init__(self, inside: threading.Event, go: threading.Event):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.inside, self.go = inside, go

    def forward(self, x):
        self.inside.set()
        assert self.go.wait(30)
        return self.fc(x)


@pytest.mark.parametrize("second", ["record", "debug", "guard"])
def test_a_second_thread_is_refused_while_a_run_goes_on(second, tmp_path, monkeypatch):
    monkeypatch.setenv("HOOKTUI_DIR", str(tmp_path))
    inside, go = threading.Event(), threading.Event()
    model = Gate(inside, go)
    results = {}

    def first():
        results["first"] = hooktui.record(model, torch.ones(2, 3))

    thread = threading.Thread(target=first)
    thread.start()
    assert inside.wait(30)
    other = nn.Linear(3, 1)
    try:
        with pytest.raises(ConcurrentRunError, match="one thread's run at a time"):
            if second == "record":
                hooktui.record(other, torch.ones(2, 3))
            elif second == "debug":
                hooktui.debug(other, torch.ones(2, 3))
            else:
                with hooktui.guard(other):
                    pass
    finally:
        go.set()
        thread.join(30)
    trace = results["first"]
    assert trace.state == "finished" and not trace.failed
    # The first run's firings are its own, all of them: plain forward hooks count the calls.
    assert sum(e.hook == "forward" for e in trace.events) == 2  # the root and fc
    for name, function in ORIGINAL.items():
        assert getattr(torch.Tensor, name) is function
    assert torch.autograd.grad is ORIGINAL_GRAD and torch.autograd.backward is ORIGINAL_BACKWARD
    # Free again: the refused thread's call now works.
    assert not hooktui.record(other, torch.ones(2, 3)).failed


def test_debug_inside_a_guard_on_the_same_thread_is_one_run(tmp_path, monkeypatch):
    monkeypatch.setenv("HOOKTUI_DIR", str(tmp_path))
    model = nn.Linear(3, 1)
    with hooktui.guard(model):
        loss = hooktui.debug(model, torch.ones(2, 3))
    assert torch.isfinite(loss)
    with hooktui.guard(model):  # released after the block: claimable again
        model(torch.ones(2, 3)).sum().backward()
