"""The Values pane at 120x40 (issue 32, item 8): a (16,) gradient was cut after 5 values and a
(2, 5, 16) slice showed 5 of its 16 columns while Explain beside it had room to spare. A vector
now wraps into rows of what fits (rows named by their first index, columns by offset), and
values whose grid is cut take 60% of the width from Explain; where they fit, Explain keeps it."""

import math

from hooktui.engine.records.format import number
from hooktui.engine.records.records import Event, ModuleInfo, TensorRecord, TraceInfo
from hooktui.ui.app import HooktuiApp
from hooktui.ui.widgets.tensors import TensorsPane
from hooktui.ui.widgets.values_grid import ValuesGrid
from screen_text import screen_rows
from ui_helpers import run

VECTOR = [math.sin(i) * 3.7 for i in range(16)]
BLOCK = [math.cos(i) / 7 for i in range(2 * 5 * 16)]
SMALL = [0.25, -1.5, 3.0]


def _app() -> HooktuiApp:
    info = TraceInfo(model="Synthetic", modules=[ModuleInfo("", "Net")], loss="none")
    tensors = [
        TensorRecord(name="grad", shape=[16], dtype="float32", device="cpu", values=VECTOR, values_shape=[16]),
        TensorRecord(name="block", shape=[2, 5, 16], dtype="float32", device="cpu", values=BLOCK, values_shape=[2, 5, 16]),
        TensorRecord(name="small", shape=[3], dtype="float32", device="cpu", values=SMALL, values_shape=[3]),
    ]
    events = [Event(index=0, phase="forward", hook="forward", module="", module_type="Net", call=0, tensors=tensors)]
    return HooktuiApp(recorded=(info, events), show_timings=False)


def _cells(grid: ValuesGrid) -> list[list[str]]:
    return [[str(grid.get_cell_at((r, c))).strip() for c in range(grid.column_count)] for r in range(grid.row_count)]


def test_a_vector_wraps_and_cut_values_take_the_room_at_120x40():
    app = _app()

    async def script():
        async with app.run_test(size=(120, 40), notifications=False) as pilot:
            await pilot.pause()
            pane = app.lower.pane("values")
            grid = pane.query_one(ValuesGrid)
            row_width = pane.parent.size.width
            # The vector: every value on screen, in order, rows named by their first index.
            rows = _cells(grid)
            assert [v for row in rows for v in row[1:] if v] == [number(v) for v in VECTOR]
            per_row = len(rows[0]) - 1
            assert 1 < per_row < 16 and [row[0] for row in rows] == [str(i) for i in range(0, 16, per_row)]
            assert grid.virtual_size.width <= grid.size.width  # nothing cut on the right
            assert pane.size.width >= row_width * 55 // 100  # it wanted the room
            # The (2, 5, 16) block: more of a slice's 16 columns than at 40% of the width (5).
            app.query_one(TensorsPane).table.move_cursor(row=1)
            await pilot.pause()
            first_row = next(line for line in screen_rows(app) if line.lstrip().startswith("0 ") and number(BLOCK[0]) in line)
            shown = sum(1 for v in BLOCK[:16] if f" {number(v)} " in first_row + " ")
            assert pane.size.width >= row_width * 55 // 100 and shown >= 6, (pane.size.width, first_row)
            # Three values fit at 40%: Explain keeps its 60%.
            app.query_one(TensorsPane).table.move_cursor(row=2)
            await pilot.pause()
            assert _cells(grid) == [["0", *(number(v) for v in SMALL)]]
            assert pane.size.width <= row_width * 45 // 100

    run(script())
