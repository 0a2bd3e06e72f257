"""Records are kept small (engine/summaries/lazy_stats.py, records.py, stats.py): summaries packed in
bytes once computed, strings and shapes shared, no notes list per firing, the run's graph
and session let go of. None of it may show: a live record still equals its plain twin,
also after a round trip through a trace file."""

from __future__ import annotations

import gc
import math
import weakref

import pytest
import torch
from torch import nn

import hooktui
from hooktui.engine.summaries import lazy_stats
from hooktui.engine.autograd.nodes import LazyNodeRecord
from hooktui.engine.records.records import NO_NOTES, LazyTensorRecord, TensorStats
from hooktui.engine.run.session import Session
from hooktui.engine.records.trace_file import read_trace, write_trace
from hooktui.visible import visible_event
from plain_hooks import load_sample


@pytest.mark.parametrize(
    "stats",
    [
        TensorStats(count=0),
        TensorStats(count=5, finite=2, min=-1.5, max=2.25, mean=0.375, std=2.6516504294495533, absmax=2.25,
                    norm=2.7041634565979917, nan=1, posinf=1, neginf=1, zeros=0, nonfinite=3,
                    hist=[1] + [0] * 14 + [1], hist_range=[-1.5, 2.25]),
        TensorStats(count=3, finite=0, nan=3, nonfinite=3),  # no finite value: min..norm stay None
        TensorStats(count=10**7, finite=10**7, min=0.0, max=1e300, mean=1e293, std=None, absmax=1e300, norm=1e300,
                    zeros=5_000_000, hist=[2**20] + [0] * 15, hist_range=[0.0, 1e300], approx=True,
                    sampled=2**20, of="abs", hist_sampled=2**20),
    ],
)
def test_packed_statistics_come_back_equal(stats):
    assert lazy_stats.unpack_stats(lazy_stats.pack_stats(stats)) == stats


def test_live_records_equal_their_round_trip_through_a_trace_file(tmp_path):
    sample = load_sample("cnn")
    trace = hooktui.record(sample.build_model(), sample.example_inputs(), sample.loss_fn)
    assert not trace.failed
    live = [t for e in trace.events for t in e.tensors if isinstance(t, LazyTensorRecord)]
    assert live and any(isinstance(e.node, LazyNodeRecord) for e in trace.events)
    path = tmp_path / "run.jsonl"
    write_trace(path, trace.info, trace.events)
    _, loaded = read_trace(path)
    assert len(loaded) == len(trace.events)
    for got, want in zip(trace.events, loaded):
        assert got == want, (got.index, got.hook, got.module)
    # And the live ones still read the same once read (packed, rebuilt on each read).
    first = live[0]
    assert first.stats == first.stats and first.stats is not first.stats
    assert first.values == first.values


def test_records_share_what_repeats():
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(6, 6) for _ in range(4)])
    trace = hooktui.record(model, torch.randn(3, 6))
    outputs = [t for e in trace.events if e.hook == "forward" for t in e.tensors if t.name == "output"]
    assert len(outputs) >= 4
    assert all(t.shape is outputs[0].shape for t in outputs)  # one list for one shape
    assert all(t.dtype is outputs[0].dtype and t.device is outputs[0].device for t in outputs)
    quiet = [e for e in trace.events if not e.notes]
    assert quiet and all(e.notes is NO_NOTES for e in quiet)
    with pytest.raises(TypeError):
        quiet[0].notes.append("x")
    data = quiet[0].to_dict()
    data["notes"].append("a note of the caller's")  # to_dict hands out a list of its own
    assert quiet[0].notes == []


def test_the_live_check_of_an_event_computes_no_summary_and_builds_no_node_record():
    """The app makes every live event safe to show (visible_event) on the model's thread:
    that must not compute what the lazy records put off."""
    checked = []
    session = Session(nn.Sequential(nn.Linear(4, 4), nn.Tanh()), torch.randn(2, 4), pause=False)
    session.run(on_event=lambda event: checked.append(visible_event(event)))
    assert checked and all(a is b for a, b in zip(checked, session.events))
    summaries = [t._summary for e in session.events for t in e.tensors if isinstance(t, LazyTensorRecord)]
    assert summaries and all(s._result is None for s in summaries if isinstance(s, lazy_stats.HostSnapshot))
    nodes = [e.node for e in session.events if isinstance(e.node, LazyNodeRecord)]
    assert nodes
    for node in nodes:
        with pytest.raises(AttributeError):
            object.__getattribute__(node, "next")  # not built yet


def test_a_dropped_trace_is_freed_at_once_and_holds_no_graph():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1))
    gc.collect()
    gc.disable()
    try:
        trace = hooktui.record(model, torch.randn(2, 4))
        assert trace.output.grad_fn is None and not trace.output.requires_grad
        assert math.isfinite(float(trace.output.sum()))
        gone = weakref.ref(trace)
        del trace
        assert gone() is None  # no reference cycle kept it: freed without the collector
    finally:
        gc.enable()


def _finite(value):
    """NaN/Inf as strings (NaN never equals NaN), everywhere; tuples kept apart from lists."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_finite(v) for v in value)
    return value


def _asdict_json(event) -> tuple[dict, str]:
    """The dict and JSON line the writer made with dataclasses.asdict and a full walk for NaN/Inf."""
    import dataclasses
    import json

    data = dataclasses.asdict(event)
    data["notes"] = list(event.notes)
    if not data["sub"]:
        del data["sub"]  # written only for a stepped-into node firing (#N.k): plain lines stay as they were
    for tensor in data["tensors"]:
        if tensor["layout"] is None:
            del tensor["layout"]  # written only for a nested or sparse tensor: dense ones stay as they were
    return _finite(data), json.dumps(_finite(data), separators=(",", ":"))


def test_records_turn_into_the_dicts_and_json_lines_asdict_makes(tmp_path):
    import dataclasses

    from hooktui.engine.records.trace_file import event_json

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    model[0].register_forward_hook(lambda m, a, o: None)  # a user_hook firing
    x = torch.randn(5, 3)
    x[0, 0] = float("nan")  # NaN in the kept values and the stats
    x[1, 1] = float("inf")
    trace = hooktui.record(model, x, legacy=True)
    rnn = load_sample("rnn")
    live = trace.events + hooktui.record(rnn.build_model(), rnn.example_inputs(), rnn.loss_fn).events
    write_trace(tmp_path / "t.jsonl", trace.info, live)
    events = live + read_trace(tmp_path / "t.jsonl")[1]  # plain records, as a trace file gives
    assert any(e.user_hook is not None for e in events) and any(e.node is not None for e in events)
    assert any(t.values and any(not math.isfinite(v) for v in t.values) for e in events for t in e.tensors)
    for event in events:
        want, want_line = _asdict_json(event)
        got = event.to_dict()
        assert _finite(got) == want, (event.index, event.hook, event.module)
        assert event_json(event) == want_line
        # New containers, as asdict makes: changing them leaves the record as it was.
        for tensor, plain_tensor in zip(event.tensors, got["tensors"]):
            if type(tensor) is not LazyTensorRecord and tensor.values is not None:
                assert plain_tensor["values"] is not tensor.values
    assert dataclasses.is_dataclass(events[0])
