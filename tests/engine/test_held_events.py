"""A run's firings held packed once it ends (engine/records/held.py).

Read back, they are the records the run made, field by field (Note kinds, value blocks,
node trees), in every reader's form: a trace file, event_json, position_of, one firing at
a time and slices. And a held firing costs fewer Python bytes than the record objects it
replaces: a bound on tracemalloc's count (what the records themselves allocate, no RSS and
no timing), which the unpacked records of main exceed (~850 B a firing there, ~470 here)."""

from __future__ import annotations

import gc
import tracemalloc

import torch
from torch import nn

from hooktui.engine.records import held
from hooktui.engine.records.notes import Note, kind_of
from hooktui.engine.records.records import NO_NOTES, Event, NodeRecord, TensorRecord, TensorStats, position_of
from hooktui.engine.records.trace_file import event_json, read_trace, write_trace
from hooktui.engine.run.session import Session, record


def _model(blocks: int) -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    layers: list[nn.Module] = []
    for _ in range(blocks):
        layers += [nn.Linear(16, 16), nn.Tanh()]
    return nn.Sequential(*layers), torch.randn(4, 16)


def _kinds(events) -> list:
    return [([kind_of(n) for n in e.notes], [kind_of(t.note) for t in e.tensors]) for e in events]


def test_packed_firings_read_back_as_the_records_the_run_made(monkeypatch, tmp_path):
    monkeypatch.setattr(held, "PACK_AFTER", 0)
    model, x = _model(12)
    made = []  # the records as the run made them, kept here (the store lets its own go)
    trace = Session(model, x, pause=False, legacy=True).run(on_event=made.append)
    events = trace.events
    assert len(events) == len(made) and 0 < len(made) - held.CHUNK < events.packed

    read = list(events)
    assert read == made
    assert [event_json(e) for e in read] == [event_json(e) for e in made]
    assert _kinds(read) == _kinds(made)
    assert any(t.values for e in read for t in e.tensors) and any(e.node is not None for e in read)
    # One firing at a time, as the app steps, slices as it walks, and numbers as it finds them.
    assert all(events[i] == made[i] for i in range(len(made)))
    assert events[-1] == made[-1] and list(events[5:70]) == made[5:70] and list(reversed(events)) == made[::-1]
    assert all(position_of(events, e.index, e.sub) == position_of(made, e.index, e.sub) for e in made)
    # A trace file written from the packed store is the one written from the records.
    write_trace(tmp_path / "packed.jsonl", trace.info, events)
    write_trace(tmp_path / "made.jsonl", trace.info, made)
    assert (tmp_path / "packed.jsonl").read_bytes() == (tmp_path / "made.jsonl").read_bytes()
    assert read_trace(tmp_path / "packed.jsonl")[1] == made


def test_a_held_firing_costs_less_than_its_record_objects():
    model, x = _model(200)  # 2,405 firings: packed at the run's end (PACK_AFTER)
    record(nn.Sequential(nn.Linear(16, 16)), x)  # imports and caches, outside the count
    gc.collect()
    tracemalloc.start()
    try:
        trace = record(model, x, legacy=True)
        gc.collect()
        held_with = tracemalloc.get_traced_memory()[0]
        n = len(trace.events)
        packed = getattr(trace.events, "packed", 0)
        del trace
        gc.collect()
        per_firing = (held_with - tracemalloc.get_traced_memory()[0]) / n
    finally:
        tracemalloc.stop()
    # The record objects cost ~850 bytes a firing here (~1,060 on the device path);
    # packed, ~470 (of which ~340 the value blocks of 64 values per tensor).
    assert per_firing < 640, per_firing
    assert n > held.PACK_AFTER and packed > n - held.CHUNK


def test_what_a_file_or_a_hunt_puts_in_a_record_reads_back_as_it_was(monkeypatch):
    """Notes of a kind (a hunt's, on a firing and on a tensor), statistics and values as a
    trace file gives them (an integer where a float is), a value block float32 cannot hold."""
    monkeypatch.setattr(held, "PACK_AFTER", 0)
    stats = TensorStats(count=4, finite=4, min=0, max=2.5, mean=1.25, std=None, absmax=2.5, norm=3.0, zeros=1,
                        hist=[1, 0, 3], hist_range=[0.0, 2.5])
    events = []
    for i in range(3 * held.CHUNK + 5):
        tensors = [
            TensorRecord("output", [2, 2], "float32", "cpu", True, "AddBackward0", stats=stats, values=[0, 1, 2, 2.5],
                         values_shape=[2, 2], note=Note("held_grad", "the .grad this parameter already held")),
            TensorRecord("grad_output[0]", [3], "float64", "cpu", values=[0.1, 1e300, -0.0], values_shape=[3],
                         stats=TensorStats(count=3, finite=3, min=-0.0, max=1e300, hist=[2, 1], hist_range=[-0.0, 1e300])),
            TensorRecord("args[1]", None, missing="not a tensor argument"),
        ]
        notes = [Note("not_finite", "x is not finite: made by MulBackward0", about="x"), "plain words"] if i % 2 else NO_NOTES
        node = NodeRecord("AddBackward0", i, [NodeRecord("AccumulateGrad"), None], {"other": [2, 2], "self": "freed"})
        events.append(Event(index=i, phase="backward", hook="backward", module="fc", module_type="Linear", call=i,
                            tensors=tensors, node=node, notes=notes))
    unpacked = held.HeldEvents(events)  # no run of this process filled it (a trace file's): kept as given
    assert unpacked.packed == 0 and list(unpacked) == events
    held.run_started()  # as a run does around its store
    try:
        store = held.HeldEvents(events)
    finally:
        held.run_ended()
    assert store.packed == 3 * held.CHUNK
    read = list(store)
    assert read == events and [event_json(e) for e in read] == [event_json(e) for e in events]
    assert _kinds(read) == _kinds(events) and [n.about for n in read[1].notes[:1]] == ["x"]
    assert type(read[0].tensors[0].stats.min) is int and type(read[0].tensors[0].values[0]) is int
    assert read[0].notes is NO_NOTES
