"""`hooktui view A --against B`: the app opens where the runs part, marks every firing that
differs (≠, the first ≠1st), and shows B's numbers beside each tensor."""

from __future__ import annotations

import asyncio
import json

from hooktui.engine.analysis.compare import compare
from hooktui.engine.run.loader import load_target
from hooktui.engine.records.records import Event
from hooktui.engine.run.session import record
from hooktui.engine.records.trace_file import event_json
from hooktui.ui.against import Against
from hooktui.ui.app import HooktuiApp
from hooktui.ui.screens.overview import OverviewScreen
from hooktui.ui.widgets.overview import OverviewRows
from hooktui.ui.widgets.tensors import TensorsPane

from ui_helpers import SAMPLES, run, wait_for


def saved_run():
    loaded = load_target(SAMPLES / "seed.py")
    trace = record(loaded.model, loaded.inputs, loaded.loss_fn)
    return trace.info, [Event.from_dict(json.loads(event_json(e))) for e in trace.events]


def test_view_against_opens_at_the_first_divergence():
    info, a = saved_run()
    _, b = saved_run()
    # B: fc2's output (and what follows from it in the loss) shifted: its max moved by 0.5.
    position = next(i for i, e in enumerate(b) if e.hook == "forward" and e.module == "fc2")
    output = next(t for t in b[position].tensors if t.name == "output")
    output.stats.max += 0.5
    app = HooktuiApp(recorded=(info, a), against=Against("b.jsonl", compare(a, b)), show_timings=False)

    async def script():
        async with app.run_test(size=(120, 40), notifications=False) as pilot:
            await pilot.pause()
            assert app.history.cursor == position
            rows = ["".join(s.text for s in strip) for strip in app.screen._compositor.render_strips()]
            marked = [r for r in rows if "≠" in r and (" fwd " in r or " bwd " in r)]  # timeline rows
            assert len(marked) == 1 and "≠1st" in marked[0] and " fc2 " in marked[0]
            table = app.query_one(TensorsPane).table
            columns = table.column_labels
            assert columns[:5] == ["tensor", "shape", "vs B", "stats", "B"]
            cells = {str(table.get_row_at(i)[0]): table.get_row_at(i) for i in range(table.row_count)}
            assert str(cells["output"][2]).startswith("≠") and "max" in str(cells["output"][2])
            assert f"{output.stats.max:.4g}" in str(cells["output"][4])
            assert str(cells["args[0]"][2]).startswith("= ")  # fc2's input did not change
            # The overview marks fc2's row.
            await pilot.press("w")
            await wait_for(pilot, lambda: isinstance(app.screen, OverviewScreen), "the overview")
            await pilot.pause()
            overview = app.screen.query_one(OverviewRows)
            flagged = [r.module for i, r in enumerate(overview.calls.rows) if overview._mark(r)]
            assert flagged == ["fc2"]

    run(script())


def test_view_against_another_rank_names_both_ranks():
    """Two ranks' files (issue 26): the status line and the title say which ranks are
    compared; files without ranks say nothing of ranks."""
    info, a = saved_run()
    _, b = saved_run()

    async def status_of(against):
        app = HooktuiApp(recorded=(info, a), against=against, show_timings=False)
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            await pilot.pause()
            rows = ["".join(s.text for s in strip) for strip in app.screen._compositor.render_strips()]
            return rows[0], app.title  # the status line is the top row

    status, title = asyncio.run(status_of(Against("b.jsonl", compare(a, b), ranks=(0, 1))))
    assert "rank 0 vs rank 1" in status and title.endswith("(rank 0 vs rank 1)")
    status, _ = asyncio.run(status_of(Against("b.jsonl", compare(a, b), ranks=(None, 3))))
    assert "A vs rank 3" in status
    status, title = asyncio.run(status_of(Against("b.jsonl", compare(a, b))))
    assert "rank" not in status and "rank" not in title
    assert Against("b.jsonl", compare(a, b), ranks=(0, 1)).summary().startswith("against b.jsonl (rank 1): the runs agree")
