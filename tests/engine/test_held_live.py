"""The app's history packs its firings while the run goes on (engine/records/held.py,
ui/history.py): a chunk once it is PACK_BEHIND firings behind the latest and every summary
in it is settled, never computing one and never waiting for a device.

Read back, the packed firings are the records the run made, field by field, in every form
the app reads them: one at a time, slices, numbers, the firings of a kind (explain)."""

from __future__ import annotations

import torch
from torch import nn

from hooktui.engine.records import held
from hooktui.engine.records.notes import kind_of
from hooktui.engine.records.records import Event, LazyTensorRecord, TensorStats, firings_of, position_of
from hooktui.engine.records.stats_bytes import counts_of, pack_stats, unpack_stats
from hooktui.engine.records.trace_file import event_json
from hooktui.engine.run.session import Session
from hooktui.engine.summaries import lazy_stats, stats
from hooktui.ui.history import History


def _model(blocks: int) -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    layers: list[nn.Module] = []
    for _ in range(blocks):
        layers += [nn.Linear(16, 16), nn.Tanh()]
    return nn.Sequential(*layers), torch.randn(4, 16)


def _small_budget(monkeypatch) -> None:
    """Every store packs, and a snapshot's values are dropped a few firings after it is
    taken (so that summaries settle within a small run, as they do past 32 MB in a long one)."""
    monkeypatch.setattr(held, "PACK_AFTER", 0)
    monkeypatch.setattr(lazy_stats, "SNAPSHOT_BUDGET_BYTES", 2048)


def _run_into(history: History | list, options=None) -> tuple[list[Event], list[int], list[int]]:
    """The model run as the app runs it (the session keeps the last firing only), each
    firing handed to `history` as it comes; the records made, the count packed and the
    host copies made so far, seen at each firing."""
    model, x = _model(30)
    made, packed, copies = [], [], []

    def arrived(event: Event) -> None:
        made.append(event)
        if isinstance(history, History):
            history.extend([event])
            packed.append(history.events.packed)
        else:
            history.append(event)
        copies.append(lazy_stats.host_transfers)

    Session(model, x, pause=False, legacy=True, keep_events=False, options=options).run(on_event=arrived)
    return made, packed, copies


def _kinds(events) -> list:
    return [([kind_of(n) for n in e.notes], [kind_of(t.note) for t in e.tensors]) for e in events]


def test_the_history_packs_while_the_run_goes_on_and_reads_back_the_records_it_was_given(monkeypatch):
    _small_budget(monkeypatch)
    history = History()
    made, packed, _ = _run_into(history, stats.StatsOptions(defer_host=False))  # the CPU path (the device path: below)
    events = history.events
    # Packed while the run went on (before its last firing arrived), nothing more at its end.
    assert 0 < packed[-2] and events.packed == packed[-1] and len(made) - events.packed >= held.PACK_BEHIND
    assert len(events) == len(made) == len(history)

    read = list(events)
    assert read == made
    assert [event_json(e) for e in read] == [event_json(e) for e in made]
    assert _kinds(read) == _kinds(made)
    assert any(e.node is not None for e in read[: events.packed])
    # As the app reads it: one at a time both ways, slices, numbers, kinds of firing.
    assert all(events[i] == made[i] for i in range(len(made) - 1, -1, -1))
    assert list(events[3:200]) == made[3:200] and list(reversed(events)) == made[::-1]
    assert list(events[: history.cursor + 1]) == made[: history.cursor + 1]
    assert all(position_of(events, e.index, e.sub) == position_of(made, e.index, e.sub) for e in made)
    assert all(events.hook_at(i) == e.hook for i, e in enumerate(made))
    for module in sorted({e.module for e in made}):
        for hook in ("forward", "backward", "param_grad", "legacy_backward"):
            assert firings_of(events, hook, module) == firings_of(made, hook, module)
    assert firings_of(events, "param_grad") == firings_of(made, "param_grad")
    events.clear()  # as a list's (benchmarks/app_memory_parts.py lets the history go so)
    assert len(events) == 0 and list(events) == [] and firings_of(events, "forward") == []


def test_a_note_added_to_the_latest_firing_after_it_arrived_is_packed_with_it(monkeypatch):
    """hooktui's own failures are noted on the latest firing, after it was handed on
    (engine/capture/contain.py): the latest firing is never packed."""
    monkeypatch.setattr(held, "PACK_AFTER", 0)
    history = History()
    n = 6 * held.CHUNK + held.PACK_BEHIND
    held.run_started()  # as a run does
    try:
        for i in range(n):
            history.extend([Event(index=i, phase="forward", hook="forward", module=f"m{i % 3}", module_type="Linear", call=i)])
            latest = history.events[-1]
            latest.notes = [*latest.notes, f"hooktui failed after firing {i}"]
    finally:
        held.run_ended()
    assert history.events.packed >= 4 * held.CHUNK
    assert [e.notes for e in history.events] == [[f"hooktui failed after firing {i}"] for i in range(n)]


class _Pending:
    """A summary still to be computed (a snapshot under the budget, or on a device) until `done`."""

    def __init__(self) -> None:
        self.done = False
        self.computed_early = 0
        self._stats = pack_stats(TensorStats(count=4, finite=4, min=-1.0, max=2.0, mean=0.5, std=1.0, absmax=2.0, norm=3.0,
                                             hist=[1, 0, 3], hist_range=[-1.0, 2.0]))

    def settled(self) -> bool:
        return self.done

    def compact(self) -> tuple:
        self.computed_early += not self.done
        return self._stats, None, False, None

    def read_stats(self) -> TensorStats:
        return unpack_stats(self._stats)

    def read_values(self) -> None:
        return None

    def read_values_shape(self) -> None:
        return None

    def nonfinite_counts(self) -> tuple[int, int, int]:
        return counts_of(self._stats)


def _firing(i: int, summary=None) -> Event:
    tensors = []
    if summary is not None:
        record = LazyTensorRecord.__new__(LazyTensorRecord)
        record.name, record.shape, record.dtype, record.device = "output", [2, 2], "float32", "cpu"
        record.requires_grad, record.grad_fn, record.target = True, "AddBackward0", None
        record.missing, record.note, record.extra, record.layout = None, None, False, None
        record._summary = summary
        tensors.append(record)
    return Event(index=i, phase="forward", hook="forward", module="fc", module_type="Linear", call=i, tensors=tensors)


def test_a_chunk_with_a_pending_summary_waits_until_it_is_settled(monkeypatch):
    monkeypatch.setattr(held, "PACK_AFTER", 0)
    pending = _Pending()
    history = History()
    held.run_started()
    try:
        history.extend([_firing(i, pending if i == held.CHUNK + 3 else None) for i in range(6 * held.CHUNK + held.PACK_BEHIND)])
        assert history.events.packed == held.CHUNK  # the first chunk only: the second holds the pending one
        history.extend([_firing(i) for i in range(len(history), len(history) + 2 * held.CHUNK)])
        assert history.events.packed == held.CHUNK and pending.computed_early == 0  # never computed to pack it
        pending.done = True
        history.extend([_firing(i) for i in range(len(history), len(history) + 2 * held.CHUNK)])
        assert history.events.packed >= 3 * held.CHUNK
    finally:
        held.run_ended()
    firing = history.events[held.CHUNK + 3]
    assert firing.tensors[0].stats == pending.read_stats() and firing.tensors[0].values is None


def test_on_the_device_path_packing_never_copies_a_summary_to_the_host_mid_run(monkeypatch):
    """The deferred path (CUDA's, here on the CPU): summaries reach the host when the run
    flushes them itself (too much pending, a pause, the end); the history packs those the
    budget has since settled, and asks for no copy of its own."""
    _small_budget(monkeypatch)
    monkeypatch.setattr(lazy_stats, "MAX_PENDING_ELEMENTS", 2048)  # the run flushes a few times
    options = stats.StatsOptions(defer_host=True)
    history = History()
    made, packed, copies = _run_into(history, options)
    _, _, twin_copies = _run_into([], options)  # the same run, its firings kept in a list
    assert packed[-2] > 0  # packed mid-run
    assert [c - copies[0] for c in copies] == [c - twin_copies[0] for c in twin_copies]
    assert list(history.events) == made
