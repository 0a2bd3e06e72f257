"""The `/` search on a packed history (ui/search.py Matches, deciding from engine/records/held.py's
columns): the app finds the matches `Search.matches` finds reading each record of the same
firings held as a plain list, built separately; `n` / `N` go to them, the status line counts
them, `L` finds them again with the legacy firings shown; and the search itself unpacks no
chunk (only the firings the screen then shows are read)."""

from __future__ import annotations

from hooktui.engine.analysis.search import parse_search
from hooktui.engine.records import held
from hooktui.engine.records.records import TraceInfo
from hooktui.ui.app import HooktuiApp

from ui_helpers import run
from uneven_firings import counting_decodes, searchable_firings


def _expected(query: str, hidden: set[str]) -> list[int]:
    search = parse_search(query)
    return [at for at, e in enumerate(searchable_firings()) if e.hook not in hidden and search.matches(e)]


def _status(app) -> str:
    return app.status_line.render().plain


def test_a_search_on_a_packed_history_finds_the_records_matches_and_n_N_go_to_them(monkeypatch):
    decodes = counting_decodes(monkeypatch)  # every store packs (PACK_AFTER 0); unpacked chunks counted
    app = HooktuiApp(recorded=(TraceInfo("t", [], "none"), searchable_firings()), show_timings=False)
    query = "tensor:grad_input nonfinite"

    async def script():
        async with app.run_test(size=(120, 40), notifications=False) as pilot:
            await pilot.pause()
            events, history = app.history.events, app.history
            # Packed as the app's history packs while a run goes on: the last firings stay records.
            assert 0 < events.packed < len(events) - held.CHUNK
            expected = _expected(query, history.hidden)
            assert len(expected) >= 4 and expected[0] > 0 and expected[-1] >= events.packed  # some in the tail
            assert history.cursor == 0
            before = len(decodes)
            await pilot.press("slash", *query, "enter")
            assert len(app.search) == len(expected)
            assert [p for p in range(len(events)) if p in app.search] == expected
            assert history.cursor == expected[0] and f"/{query}  1/{len(expected)}" in _status(app)
            # The search read no record: what was unpacked is the screen's (the firing shown,
            # the timeline's rows around it: a few chunks, of ~20).
            assert len(decodes) - before <= 3 < events.packed // held.CHUNK
            await pilot.press("n")
            assert history.cursor == expected[1] and f"2/{len(expected)}" in _status(app)
            await pilot.press("N", "N")  # before the first: round to the last (in the tail)
            assert history.cursor == expected[-1] and f"{len(expected)}/{len(expected)}  wrapped" in _status(app)
            # `L` shows the legacy firings: found again, with theirs.
            hidden_before = set(history.hidden)
            await pilot.press("L")
            assert history.hidden != hidden_before
            shown = _expected(query, history.hidden)
            assert shown != expected and len(app.search) == len(shown)
            assert [p for p in range(len(events)) if p in app.search] == shown
            await pilot.press("g", "n")
            assert history.cursor == shown[0] and f"1/{len(shown)}" in _status(app)

    held.run_started()  # the history packs as it fills, as while a run goes on
    try:
        run(script())
    finally:
        held.run_ended()
