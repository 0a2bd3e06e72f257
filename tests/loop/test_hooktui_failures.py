"""hooktui's own failures never change the user's run (engine/capture/contain.py): a summary, a
comparison, a hook's bookkeeping or a trace file that fails is written on the firing,
and the step's loss, `.grad`s, parameters and their types are those of a plain step;
the step's own exception and a guard's NonFiniteError come out as without the failure."""

from __future__ import annotations


import pytest
import torch
from torch import nn
from torch.nn import functional as F

import hooktui
import hooktui.loop.debug
import hooktui.loop.guard
import hooktui.loop.where
from hooktui.engine.capture import param_grads, tracer, user_hooks
from hooktui.engine.summaries import lazy_stats, stats
from hooktui.engine.records.trace_file import read_trace_file
from loop_helpers import assert_same_state, batch, net_and_twin

BOOM = "boom from a test"


@pytest.fixture(autouse=True)
def _no_terminal(monkeypatch):
    monkeypatch.setattr(hooktui.loop.where, "terminal_attached", lambda: False)


def _raising(*_args, **_kwargs):
    raise RuntimeError(BOOM)


def _debug_against_plain(net, twin, tmp_path, step_seed: int = 5):
    """One hooktui.debug step of `net` and one plain step of `twin`: both losses, and the
    firings of the trace debug saved."""
    x, y = batch()
    torch.manual_seed(step_seed)
    loss = hooktui.debug(net, lambda: F.cross_entropy(net(x), y))
    torch.manual_seed(step_seed)
    plain = F.cross_entropy(twin(x), y)
    plain.backward()
    (path,) = sorted(tmp_path.glob("hooktui-*.jsonl"))
    return loss, plain.detach(), read_trace_file(path).events


def _assert_step_as_plain(net, twin, loss, plain) -> None:
    assert torch.equal(loss, plain)
    assert_same_state(net, twin)
    for (name, p), (_, q) in zip(net.named_parameters(), twin.named_parameters(), strict=True):
        assert type(p) is type(q) is nn.Parameter, name
        assert type(p.grad) is type(q.grad), name
    for (name, b), (_, c) in zip(net.named_buffers(), twin.named_buffers(), strict=True):
        assert torch.equal(b, c), f"buffer {name}"
    assert not net.fc1._forward_hooks and not net.fc1.weight._post_accumulate_grad_hooks  # hooktui's are gone


@pytest.mark.parametrize("which", ["every tensor", "one tensor"])
def test_a_summary_that_raises_is_a_missing_record_and_the_step_is_plain(monkeypatch, tmp_path, which):
    describe = stats.describe

    def failing(name, tensor, *args, **kwargs):
        if which == "every tensor" or name == "weight.grad":
            raise RuntimeError(BOOM)
        return describe(name, tensor, *args, **kwargs)

    monkeypatch.setattr(stats, "describe", failing)
    net, twin = net_and_twin()
    loss, plain, events = _debug_against_plain(net, twin, tmp_path)
    _assert_step_as_plain(net, twin, loss, plain)
    records = [t for e in events for t in e.tensors]
    failed = [t for t in records if t.missing == f"hooktui could not summarise this tensor: RuntimeError: {BOOM}"]
    if which == "every tensor":
        assert len(failed) > 30 and all(t.is_missing for t in records)  # the others: no gradient there
    else:
        assert sorted(t.target for t in failed) == ["bn.weight", "fc1.weight", "fc2.weight"]
        assert all(not t.is_missing for t in records if t.name != "weight.grad" and t.missing is None)
    assert {"forward_pre", "forward", "backward_pre", "backward", "param_grad"} <= {e.hook for e in events}


def test_a_lazy_summary_that_raises_when_read_leaves_no_stats_and_a_note(monkeypatch):
    monkeypatch.setattr(lazy_stats, "finish", _raising)  # both paths (host, device) resolve through it
    net, twin = net_and_twin()
    x, y = batch()
    trace = hooktui.record(net, x, lambda out: F.cross_entropy(out, y))
    assert not trace.failed
    record = trace.events[0].tensors[0]
    assert record.stats is None and record.values is None
    assert record.note == f"hooktui could not summarise this tensor: RuntimeError: {BOOM}"
    assert record.shape == [5, 6]
    # A guard reading norms in every backward firing goes through the step.
    torch.manual_seed(5)
    with hooktui.guard(net, max_grad_norm=1e-12):
        F.cross_entropy(net(x), y).backward()
    torch.manual_seed(5)
    F.cross_entropy(twin(x), y).backward()
    assert_same_state(net, twin)


@pytest.mark.parametrize("target", ["output_slots", "param_grad_source", "grad_output_firing"])
def test_a_hook_whose_bookkeeping_raises_leaves_the_step_plain_and_says_so(monkeypatch, tmp_path, target):
    if target == "output_slots":  # in the forward hook, after its firing
        monkeypatch.setattr(tracer, "output_slots", _raising)
        where = "its forward hook"
    elif target == "param_grad_source":  # in the post-accumulate-grad hook, before its firing
        monkeypatch.setattr(param_grads, "_definition", _raising)
        where = "its gradient hook on fc1.weight"
    else:  # in an autograd node's hook, in backward
        monkeypatch.setattr(tracer.Tracer, "_fire_grad_output", _raising)
        where = "its autograd node"
    net, twin = net_and_twin()
    loss, plain, events = _debug_against_plain(net, twin, tmp_path)
    _assert_step_as_plain(net, twin, loss, plain)
    notes = [n for e in events for n in e.notes if n.startswith("hooktui failed in ")]
    assert notes and any(n.startswith(f"hooktui failed in {where}") and n.endswith(f"RuntimeError: {BOOM}") for n in notes)


def test_a_trace_that_cannot_be_written_leaves_debugs_loss_and_the_steps_exception(monkeypatch):
    monkeypatch.setattr(hooktui.loop.debug, "write_trace", _raising)
    net, twin = net_and_twin()
    x, y = batch()
    torch.manual_seed(5)
    with pytest.warns(hooktui.HooktuiWarning, match="could not save the trace to"):  # a warning: the user may fix the path
        loss = hooktui.debug(net, lambda: F.cross_entropy(net(x), y))
    torch.manual_seed(5)
    plain = F.cross_entropy(twin(x), y)
    plain.backward()
    assert torch.equal(loss, plain.detach())

    def step():
        net(x)
        raise ValueError("the step's own")

    with pytest.raises(ValueError, match="the step's own"), pytest.warns(hooktui.HooktuiWarning, match="could not save"):
        hooktui.debug(net, step)


def test_a_guard_whose_trace_cannot_be_written_still_raises_nonfinite(monkeypatch):
    monkeypatch.setattr(hooktui.loop.guard, "write_trace", _raising)
    net, _ = net_and_twin()
    x, y = batch()
    x[0, 0] = float("nan")
    with pytest.warns(hooktui.HooktuiWarning, match=f"guard could not save the step's firings: RuntimeError: {BOOM}"):
        with pytest.raises(hooktui.NonFiniteError) as caught:
            with hooktui.guard(net):
                F.cross_entropy(net(x), y).backward()
    assert caught.value.trace_path is None


class _Hooked(nn.Module):
    """A user forward pre-hook that replaces the input."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.fc.register_forward_pre_hook(lambda m, args: (args[0] * 2,))


def test_a_comparison_that_raises_leaves_the_users_hook_in_effect(monkeypatch):
    monkeypatch.setattr(user_hooks, "_compare", _raising)
    torch.manual_seed(0)
    model = _Hooked()
    x = torch.randn(2, 4)
    expected = F.linear(x * 2, model.fc.weight, model.fc.bias)  # the hook doubles the input
    trace = hooktui.record(model.fc, x)
    assert not trace.failed
    assert torch.equal(trace.output, expected.detach())
    (fired,) = [e for e in trace.events if e.hook == "user_hook"]
    assert fired.user_hook.changes == [f"hooktui could not compare what the hook returned with what it got: RuntimeError: {BOOM}"]


def test_the_users_hook_exception_goes_on_when_recording_it_fails(monkeypatch):
    monkeypatch.setattr(stats, "describe", _raising)
    monkeypatch.setattr(user_hooks.UserHooks, "_fire", _raising)
    fc = nn.Linear(4, 3)

    def hook(module, args):
        raise KeyError("the user's own")

    fc.register_forward_pre_hook(hook)
    with pytest.raises(KeyError, match="the user's own"):
        hooktui.debug(fc, lambda: fc(torch.randn(2, 4)).sum())


@pytest.mark.parametrize("deferred", [False, True])
def test_a_guard_whose_step_bookkeeping_raises_runs_the_step_as_plain(monkeypatch, deferred):
    monkeypatch.setattr(hooktui.loop.guard.Guard, "_root_pre", _raising)
    monkeypatch.setattr(hooktui.loop.guard.Guard, "_check_step", _raising)
    net, twin = net_and_twin()
    x, y = batch()
    torch.manual_seed(5)
    with pytest.warns(hooktui.HooktuiWarning) as warned:
        with hooktui.guard(net, stats_options=stats.StatsOptions(defer_host=deferred)):
            F.cross_entropy(net(x), y).backward()
    said = [str(w.message) for w in warned]
    assert f"guard failed in its root forward pre-hook and went on: RuntimeError: {BOOM}" in said, said
    torch.manual_seed(5)
    F.cross_entropy(twin(x), y).backward()
    assert_same_state(net, twin)


def test_a_tensor_hook_hooktui_cannot_note_is_registered_as_without_it(monkeypatch):
    monkeypatch.setattr(user_hooks.UserHooks, "_registered_info", _raising)
    seen = []

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 3)

        def forward(self, x):
            h = self.fc(x)
            h.register_hook(lambda g: seen.append(g.clone()))
            return h

    torch.manual_seed(0)
    model = Model()
    x = torch.ones(2, 4)
    trace = hooktui.record(model, x)
    assert not trace.failed and len(seen) == 1 and torch.equal(seen[0], torch.ones(2, 3))  # the default loss's seed
    assert any(n.startswith("hooktui failed in noting the hook") for e in trace.events for n in e.notes)
