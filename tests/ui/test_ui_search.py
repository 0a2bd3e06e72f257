"""The `/` search, as less and vim have it (issue 32, item 5): enter goes to the first
match at or after the current firing, the whole list stays with the matches marked, `n` /
`N` go from match to match (wrapping, said in the status line), a live run goes on to the
next match when none is known, and escape gives `n` / `N` back to stepping. In a trace
opened as `hooktui view FILE` opens it, and on a live model. Expectations are computed in
the test from the records' own fields (hook kind, module, NaN counts)."""

from __future__ import annotations

import pytest

from hooktui.engine.records.trace_file import read_trace_file, write_trace
from hooktui.ui.app import HooktuiApp
from hooktui.ui.widgets.search_input import SearchBar, SearchInput

from test_ui_hostile import screen_text
from ui_helpers import ROOT, paused_at_start, recorded, run, sample_app, wait_for

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]


def _viewed(tmp_path, name: str) -> HooktuiApp:
    """A sample's step saved to a file and opened as `hooktui view FILE` does: no model."""
    info, events = recorded(name)
    path = str(tmp_path / "run.jsonl")
    write_trace(path, info, events)
    trace = read_trace_file(path)
    return HooktuiApp(recorded=(trace.info, trace.events), sources=trace.sources, show_timings=False)


def _status(app) -> str:
    return app.status_line.render().plain


def _has_nan(event) -> bool:
    return any(t.nonfinite_counts is not None and t.nonfinite_counts[0] > 0 for t in event.tensors)


def test_recorded_trace_n_and_N_move_between_matches_and_wrap(tmp_path):
    app = _viewed(tmp_path, "cnn.py")

    async def script():
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            await pilot.pause()
            events = app.history.events
            pres = [i for i, e in enumerate(events) if e.hook == "backward_pre"]
            assert len(pres) >= 3 and app.history.cursor < pres[0]
            await pilot.press("slash", *"kind:backward_pre", "enter")
            assert app.history.cursor == pres[0]
            assert app.timeline.row_count == len(events)  # nothing is hidden
            assert f"/kind:backward_pre  1/{len(pres)}" in _status(app)
            assert app.focused is app.timeline
            await pilot.press("n")
            assert app.history.cursor == pres[1] and f"2/{len(pres)}" in _status(app)
            await pilot.press("N")
            assert app.history.cursor == pres[0]
            await pilot.press("N")  # before the first: round to the last, and said so
            assert app.history.cursor == pres[-1]
            assert f"{len(pres)}/{len(pres)}  wrapped" in _status(app)
            await pilot.press("n")
            assert app.history.cursor == pres[0] and f"1/{len(pres)}  wrapped" in _status(app)
            await pilot.press("n")
            assert app.history.cursor == pres[1] and "wrapped" not in _status(app)
            # Space steps firing by firing whatever the search; the search stays.
            await pilot.press("space")
            assert app.history.cursor == pres[1] + 1 and f"/kind:backward_pre  {len(pres)} matches" in _status(app)
            # Escape ends the search: n and N step again.
            await pilot.press("escape")
            assert app.search is None and "/kind" not in _status(app)
            await pilot.press("n")
            assert app.history.cursor == pres[1] + 2
            await pilot.press("N", "N")
            assert app.history.cursor == pres[1]

    run(script())


def test_the_current_firing_stays_listed_and_a_search_with_no_match_says_so(tmp_path):
    app = _viewed(tmp_path, "cnn.py")

    async def script():
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            await pilot.pause()
            events = app.history.events
            heads = [i for i, e in enumerate(events) if e.module == "head"]
            await pilot.press("G")  # the last firing: not one of head's
            last = app.history.cursor
            assert last not in heads
            await pilot.press("slash", *"head", "enter")
            # At the end: round to the first match, every row still there.
            assert app.history.cursor == heads[0] and "wrapped" in _status(app)
            assert app.timeline.row_count == len(events)
            await pilot.press("G")
            assert app.timeline.row_of(last) is not None  # the current firing never leaves the list
            assert f"/head  {len(heads)} matches" in _status(app)
            await pilot.press("slash", *"nosuchmodule", "enter")
            assert app.history.cursor == last and "/nosuchmodule  no match" in _status(app)
            assert app.timeline.row_count == len(events)
            await pilot.press("n")
            assert app.history.cursor == last and "no match" in _status(app)

    run(script())


def test_a_bad_query_is_said_in_the_search_box_and_changes_nothing(tmp_path):
    app = _viewed(tmp_path, "seed.py")

    async def script():
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            await pilot.pause()
            await pilot.press("slash", *"fc1", "enter")
            before = app.history.cursor
            await pilot.press("slash", *"kind:sideways", "enter")
            bar = app.query_one(SearchBar)
            assert bar.has_class("-open") and isinstance(app.focused, SearchInput)
            said = str(bar.query_one("#search-error").render())
            assert said.startswith("no hook kind 'sideways'")
            await pilot.pause()
            rows = screen_text(app).split("\t")
            assert "kind:sideways" in rows[1] and "no hook kind 'sideways'" in rows[2]  # on screen, under the query
            assert app.search.text == "fc1" and app.history.cursor == before  # the last good search stays
            await pilot.press("escape")  # closes the box and ends the search
            assert not bar.has_class("-open") and app.search is None and app.focused is app.timeline

    run(script())


def test_live_n_runs_on_to_each_next_match_then_says_no_more_matches():
    _, reference = recorded("nan.py")
    expected = [(e.hook, e.module, e.call) for e in reference if _has_nan(e)]
    assert len(expected) >= 3
    app = sample_app("nan.py")

    async def script():
        async with paused_at_start(app) as pilot:
            stops = []

            def settled(count):
                return lambda: app.state != "running" and not app._search_run and len(stops_now()) >= count

            def stops_now():
                return [p for p in range(len(app.history)) if _has_nan(app.history.events[p])]

            await pilot.press("slash", *"nan", "enter")
            await wait_for(pilot, lambda: app.state == "paused" and _has_nan(app.current), "the first NaN")
            first = app.history.cursor
            assert first == len(app.history) - 1  # the model stopped there: nothing ran past it
            stops.append(app.current)
            assert "/nan  1/1" in _status(app)
            await pilot.press("n")
            await wait_for(pilot, settled(2), "the second NaN")
            second = app.history.cursor
            stops.append(app.current)
            assert second == len(app.history) - 1 and "/nan  2/2" in _status(app)
            # Known matches: N and n walk the history, the model stays where it is.
            await pilot.press("N")
            assert app.history.cursor == first and app.state == "paused" and "1/2" in _status(app)
            await pilot.press("n")
            assert app.history.cursor == second and len(app.history) == second + 1
            while app.state == "paused":
                before = len(stops_now())
                await pilot.press("n")
                await wait_for(pilot, lambda before=before: app.state == "finished" or (settled(before + 1)()), "the next NaN or the end")
                if app.state == "paused":
                    assert _has_nan(app.current) and app.history.cursor == len(app.history) - 1
                    stops.append(app.current)
            await wait_for(pilot, lambda: "no more matches" in _status(app), "no more matches")
            assert [(e.hook, e.module, e.call) for e in stops] == expected
            # The run is over: n now goes round to the first match.
            await pilot.press("n")
            assert app.history.cursor == first and "wrapped" in _status(app)
            await pilot.press("escape", "n")
            assert app.history.cursor == first + 1

    run(script())


@pytest.mark.parametrize("size", SIZES)
def test_snapshot_an_active_search(snap_compare, size, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    app = _viewed(tmp_path, "nan.py")

    async def run_before(pilot):
        await pilot.pause()
        await pilot.press("slash", *"kind:backward* nan", "enter", "n")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_hidden_legacy_firings_match_only_while_L_shows_them():
    info, events = recorded("seed.py", legacy=True)
    legacy = [i for i, e in enumerate(events) if e.hook == "legacy_backward"]
    assert legacy
    app = HooktuiApp(recorded=(info, events), show_timings=False)

    async def script():
        async with app.run_test(size=(120, 40), notifications=False) as pilot:
            await pilot.pause()
            await pilot.press("slash", *"kind:legacy_bwd", "enter")  # the name the timeline shows
            assert app.history.cursor == legacy[0] and f"1/{len(legacy)}" in _status(app)
            await pilot.press("L")  # hidden: no longer matches, and n says so
            assert app.history.cursor < legacy[0] and "0 matches" in _status(app)
            await pilot.press("n")
            assert "/kind:legacy_bwd  no match" in _status(app)
            await pilot.press("L", "n")
            assert app.history.cursor == legacy[0]

    run(script())
