"""`final_grad` firings: once the step's backward has returned, each parameter's `.grad`
where the `param_grad` firings showed another gradient (DDP outside no_sync, FSDP1). DDP
here runs on one gloo rank in this process (its average over one rank is the plain
gradient); two ranks: tests/loop/test_distributed.py, test_fsdp2.py. A plain model gets
none, and trace files keep them (and refuse a corrupted one)."""

from __future__ import annotations

import contextlib
import json

import pytest
import torch
import torch.distributed as dist
from torch import nn

from hooktui.engine.capture import final_grads, grad_kinds
from hooktui.engine.analysis.born import where_born
from hooktui.engine.records.records import Event
from hooktui.engine.run.session import Session, record
from hooktui.engine.records.trace_file import TraceFileError, event_json, read_trace_file, write_trace
from hooktui.explain import explain


def build() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2))


X = torch.linspace(-1, 1, 8).reshape(2, 4)


def test_a_plain_model_gets_no_final_grad_firing():
    trace = record(build(), X)
    assert trace.error is None
    # 4 module calls x (forward_pre, forward, backward_pre, backward) + one param_grad per parameter.
    assert len(trace.events) == 4 * 4 + 4
    assert not [e for e in trace.events if e.hook == "final_grad"]
    assert trace.events[-1].hook in ("backward", "param_grad")


@pytest.fixture
def one_rank(tmp_path):
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def test_ddp_final_grads_are_the_grad_after_backward_and_a_trace_file_keeps_them(one_rank, tmp_path):
    model = nn.parallel.DistributedDataParallel(build())
    trace = record(model, X)
    assert trace.error is None and all(p.grad is None for p in model.parameters())  # record leaves .grad as it was
    finals = [e for e in trace.events if e.hook == "final_grad"]
    assert trace.events[-4:] == finals  # after every other firing of the step

    model(X).sum().backward()  # the same step, plainly: .grad is DDP's average (over one rank)
    expected = {name.removeprefix("module."): p.grad.reshape(-1).tolist() for name, p in model.named_parameters()}
    assert {t.target: t.values for e in finals for t in e.tensors} == expected
    for event in finals:
        (tensor,) = event.tensors
        owner, _, short = tensor.target.rpartition(".")
        assert (event.module, event.module_type, event.phase, tensor.name) == (owner, "Linear", "backward", f"{short}.grad")
        assert event.notes[0].startswith("the final .grad after the backward: DDP's average over the 1 rank")
        forward = next(e for e in trace.events if e.index == event.forward_index)
        assert (forward.hook, forward.module, forward.call) == ("forward", owner, event.call)

    path = tmp_path / "ddp.jsonl"
    write_trace(path, trace.info, trace.events)
    loaded = read_trace_file(path)
    assert [e.to_dict() for e in loaded.events] == [e.to_dict() for e in trace.events]

    # A final_grad firing whose record is corrupted is refused, naming the line and the field.
    line = json.loads(event_json(finals[0]))
    line["tensors"][0]["values"][1] = "oops"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(path.read_text().splitlines()[0] + "\n" + json.dumps(line) + "\n")
    with pytest.raises(TraceFileError, match=r"bad\.jsonl:2: tensors\[0\]\.values\[1\]: expected a number, got the string 'oops'"):
        read_trace_file(bad)
    # A misspelt kind, too: the message lists the kinds, final_grad among them.
    line = json.loads(event_json(finals[0]))
    line["hook"] = "final_grads"
    bad.write_text(path.read_text().splitlines()[0] + "\n" + json.dumps(line) + "\n")
    with pytest.raises(TraceFileError, match=r"bad\.jsonl:2: hook: expected one of .*param_grad, final_grad, .*got the string 'final_grads'"):
        read_trace_file(bad)


def test_no_final_grad_under_no_sync(one_rank):
    """Under no_sync() DDP runs no all-reduce: .grad holds what param_grad showed."""
    model = nn.parallel.DistributedDataParallel(build())
    with model.no_sync():
        trace = record(model, X)
    assert trace.error is None
    assert not [e for e in trace.events if e.hook == "final_grad"]
    assert len([e for e in trace.events if e.hook == "param_grad"]) == 4


def test_a_value_bad_only_in_the_final_grad_came_from_another_rank():
    """From records alone: finite up to this rank's param_grad, NaN in the final .grad."""
    def firing(index: int, hook: str, nan: int) -> Event:
        stats = {"count": 3, "finite": 3 - nan, "nan": nan, "nonfinite": nan}
        return Event.from_dict({"index": index, "phase": "backward", "hook": hook, "module": "0", "module_type": "Linear",
                                "call": 0, "tensors": [{"name": "bias.grad", "shape": [3], "target": "0.bias", "stats": stats}]})

    events = [firing(0, "param_grad", 0), firing(1, "final_grad", 1)]
    born = where_born(events)
    assert (born.seen, born.origin, born.tensor) == (1, 1, "bias.grad")
    assert born.lines[0].startswith("The final .grad of 0.bias holds 1 NaN once the backward has returned, while this "
                                    "rank's firings before it were finite: it came from another rank")
    assert explain(events[1], events)[0].text.startswith("Final gradient of `0`: `.grad` as it was once the backward had returned")


@pytest.mark.parametrize("where", ["finals", "one firing"])
def test_a_final_grad_that_fails_is_noted_and_the_step_is_plain(one_rank, monkeypatch, where):
    """hooktui's failure while reading the final .grads (all of them, or one firing's) is
    a note on the trace; the step's .grad are a plain DDP step's (contain.py)."""
    def boom(*_args, **_kwargs):
        raise RuntimeError("boom from a test")

    if where == "finals":
        monkeypatch.setattr(grad_kinds.GradKinds, "finals", boom)
    else:
        fire = final_grads._fire
        monkeypatch.setattr(final_grads, "_fire", lambda tracer, final: boom() if final.name == "0.bias" else fire(tracer, final))
    model, twin = nn.parallel.DistributedDataParallel(build()), nn.parallel.DistributedDataParallel(build())
    trace = Session(model, X, pause=False, restore_model=False).run()
    twin(X).sum().backward()
    assert trace.error is None and trace.state == "finished"
    assert all(torch.equal(p.grad, q.grad) for p, q in zip(model.parameters(), twin.parameters()))
    failed = [n for e in trace.events for n in e.notes if n.startswith("hooktui failed in ")]
    what = "recording the final .grad" if where == "finals" else "its final .grad of 0.bias"
    assert failed == [f"hooktui failed in {what} and left out what it would have recorded there: RuntimeError: boom from a test"]
    finals = [t.target for e in trace.events if e.hook == "final_grad" for t in e.tensors]
    assert finals == ([] if where == "finals" else ["0.weight", "2.weight", "2.bias"])


def says_ddp_all_reduced(trace, all_reduced: bool) -> None:
    """The 4 param_grad notes and the final_grad firings say what DDP did (one rank)."""
    notes = [e.notes[0] for e in trace.events if e.hook == "param_grad"]
    assert len(notes) == 4
    finals = [e for e in trace.events if e.hook == "final_grad"]
    if all_reduced:
        assert all(n.startswith("DDP: this rank's gradient, before DDP averages it over the 1 rank") for n in notes), notes
        assert len(finals) == 4
    else:
        assert all(n.startswith("DDP under no_sync()") for n in notes), notes
        assert finals == []


def count_all_reduces(ddp: nn.Module) -> list[int]:
    """A comm hook on `ddp` that all-reduces nothing (one rank: the bucket is its own
    average) and notes each bucket DDP hands it: the list stays empty when DDP skipped
    the all-reduce."""
    buckets: list[int] = []

    def counted(state, bucket):
        buckets.append(bucket.index())
        done = torch.futures.Future()
        done.set_result(bucket.buffer())
        return done

    ddp.register_comm_hook(None, counted)
    return buckets


@pytest.mark.parametrize("no_sync_around", ["forward", "backward"])
def test_ddp_decides_at_the_forward_whether_its_backward_all_reduces(one_rank, no_sync_around):
    """DDP prepares its all-reduce in forward, only outside no_sync(): a forward under
    no_sync() with its backward outside all-reduces nothing; a forward outside with its
    backward under no_sync() does. The notes and final_grad firings say what DDP did, which
    a plain twin's comm hook (called once per bucket it all-reduces) tells."""
    model, twin = nn.parallel.DistributedDataParallel(build()), nn.parallel.DistributedDataParallel(build())
    buckets = count_all_reduces(twin)

    def step(ddp: nn.Module, later: contextlib.ExitStack) -> torch.Tensor:
        if no_sync_around == "forward":
            with ddp.no_sync():
                return ddp(X).sum()  # its backward runs outside
        out = ddp(X)
        later.enter_context(ddp.no_sync())  # left once the backward has run
        return out.sum()

    with contextlib.ExitStack() as later:
        step(twin, later).backward()
    reduced = bool(buckets)
    assert reduced is (no_sync_around == "backward")  # PyTorch's own behaviour, which the test relies on
    with contextlib.ExitStack() as later:
        trace = record(model, None, step=lambda: step(model, later))
    assert trace.error is None
    says_ddp_all_reduced(trace, reduced)


def _one_step(ddp: nn.Module, pattern: str) -> torch.Tensor:
    """One step's forwards, in the order `pattern` names them; returns the loss to backward."""
    if pattern == "forward, no_grad forward (an evaluation), its backward":
        out = ddp(X)
        with torch.no_grad():
            ddp(X)
        return out.sum()
    if pattern == "no_sync forward, plain forward, backward of the first":
        with ddp.no_sync():
            first = ddp(X)
        ddp(X)
        return first.sum()
    if pattern == "plain forward, no_sync forward, backward of the second":
        ddp(X)
        with ddp.no_sync():
            return ddp(X).sum()
    if pattern == "plain forward, no_sync forward, backward of the first":
        first = ddp(X)
        with ddp.no_sync():
            ddp(X)
        return first.sum()
    assert pattern == "no_sync forward, no_grad forward, backward of the first"
    with ddp.no_sync():
        first = ddp(X)
    with torch.no_grad():
        ddp(X)
    return first.sum()


@pytest.mark.parametrize("pattern, all_reduces", [
    ("forward, no_grad forward (an evaluation), its backward", True),
    ("no_sync forward, plain forward, backward of the first", True),
    ("plain forward, no_sync forward, backward of the second", True),
    ("plain forward, no_sync forward, backward of the first", True),
    ("no_sync forward, no_grad forward, backward of the first", False),
])
def test_any_forward_of_the_step_that_prepared_ddp_makes_its_backward_all_reduce(one_rank, pattern, all_reduces):
    """DDP's reducer, once a forward (grad on, outside no_sync) has prepared it, stays prepared
    until a backward all-reduces: a later no_grad or no_sync forward does not undo it, though
    it clears require_forward_param_sync. The notes and final_grad firings follow what DDP
    did, which a plain twin's comm hook (called once per bucket it all-reduces) tells."""
    model, twin = nn.parallel.DistributedDataParallel(build()), nn.parallel.DistributedDataParallel(build())
    buckets = count_all_reduces(twin)
    _one_step(twin, pattern).backward()
    assert bool(buckets) is all_reduces  # PyTorch's own behaviour, which the test relies on
    trace = record(model, None, step=lambda: _one_step(model, pattern), restore_model=False)
    assert trace.error is None
    assert all(torch.equal(p.grad, q.grad) for p, q in zip(model.parameters(), twin.parameters()))
    says_ddp_all_reduced(trace, all_reduces)


def test_a_failing_read_of_ddp_after_its_forward_is_noted_and_the_step_is_plain(one_rank, monkeypatch):
    """hooktui's forward hook on DDP failing is a note (contain.py); the step's .grad are a
    plain DDP step's, and with no forward read the notes fall back on DDP's flag as it stands."""
    def boom(*_args, **_kwargs):
        raise RuntimeError("boom from a test")

    monkeypatch.setattr(grad_kinds.GradKinds, "ddp_forward", boom)
    model, twin = nn.parallel.DistributedDataParallel(build()), nn.parallel.DistributedDataParallel(build())
    trace = Session(model, X, pause=False, restore_model=False).run()
    twin(X).sum().backward()
    assert trace.error is None and trace.state == "finished"
    assert all(torch.equal(p.grad, q.grad) for p, q in zip(model.parameters(), twin.parameters()))
    failed = [n for e in trace.events for n in e.notes if n.startswith("hooktui failed in ")]
    assert failed == ["hooktui failed in its forward hook on DDP and left out what it would have recorded there: "
                      "RuntimeError: boom from a test"]
    assert len([e for e in trace.events if e.hook == "final_grad"]) == 4
