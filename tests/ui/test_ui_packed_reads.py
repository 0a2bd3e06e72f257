"""The app's requests that read its whole history (the timeline's filter `&`, the save
prompt `S`, the Hooks screen `H`, a recorded trace's hooks listed at mount), on a packed
history: the same answers as on a plain history of the same firings built separately,
reading a chunk only where a firing's record is needed (a hook of the model's own).
The overview's rows: tests/engine/test_held_reads.py."""

from __future__ import annotations

from array import array

import pytest

from hooktui.engine.records import held
from hooktui.engine.records.records import TraceInfo
from hooktui.ui.history import History
from hooktui.ui.screens.user_hooks import hit_counts
from hooktui.ui.sources import RecordedSource
from hooktui.ui.widgets.timeline import Timeline

from uneven_firings import counting_decodes, firings


@pytest.fixture
def decodes(monkeypatch) -> list[int]:
    return counting_decodes(monkeypatch)


def _histories() -> tuple[History, History]:
    """The app's history packed as a run leaves it (every whole chunk), and a plain one."""
    history = History()
    held.run_started()
    try:
        history.extend(firings())
    finally:
        held.run_ended()
    history.events.pack()
    assert history.events.packed > len(history) - held.CHUNK
    plain = History()
    plain.extend(firings())
    assert plain.events.packed == 0
    return history, plain


def _filtered(history: History, hidden: set[str], text: str) -> list[int]:
    timeline = Timeline(history, hidden=hidden)
    timeline.filter_text = text  # as set_filter sets it (which then lays the widget out)
    timeline._rows, timeline._scanned = array("q"), 0
    timeline._scan()
    return list(timeline._rows)


@pytest.mark.parametrize("text", ["", "a", "(root)", "*b*", "c"])
def test_the_timeline_filter_finds_in_a_packed_history_the_rows_of_its_records_unpacking_nothing(decodes, text):
    history, plain = _histories()
    for hidden in ({"legacy_backward"}, set()):
        rows = _filtered(history, hidden, text)
        assert rows == [at for at, e in enumerate(plain.events) if e.hook not in hidden
                        and (not text or text.strip("*") in (e.module or "(root)"))]
        assert rows == _filtered(plain, hidden, text) and rows
    assert decodes == []


def test_the_save_prompt_counts_a_packed_history_unpacking_nothing_and_saves_its_records(decodes):
    history, plain = _histories()
    for hidden in ({"legacy_backward"}, set()):
        history.hidden, plain.hidden = set(hidden), set(hidden)
        assert history.shown_total == len([e for e in plain.events if e.hook not in hidden]) == plain.shown_total
    assert decodes == []
    for upto in (len(history) - 7, len(history)):  # asked before more firings came; all (the error's too)
        saved = history.shown_firings(upto, {"legacy_backward"})
        assert saved == [e for e in plain.events[:upto] if e.hook != "legacy_backward"]
    assert saved[-1].hook == "error" and any(e.sub for e in saved)


def test_the_model_s_own_hooks_and_their_hits_unpack_only_the_chunks_that_hold_one(decodes):
    history, plain = _histories()
    holding = {at // held.CHUNK for at, e in enumerate(plain.events) if e.user_hook is not None and at < history.events.packed}
    hits = hit_counts(history.events)
    assert hits == hit_counts(list(plain.events)) and sorted(hits) == [7, 9]
    assert 0 < len(decodes) <= len(holding) < history.events.packed // held.CHUNK
    decodes.clear()
    source = RecordedSource(TraceInfo("t", [], "none"), [])
    assert source.user_hooks(history.events) == source.user_hooks(list(plain.events)) and len(source.user_hooks(history.events)) == 2
    assert len(decodes) <= 2 * len(holding)  # twice asked, the store's cache of decoded chunks may hold them
