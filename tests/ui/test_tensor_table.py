"""The tensors pane's table against the DataTable it replaced: a stock DataTable filled the
way the tensors pane filled one (cursor_type="row", no zebra stripes, explicit widths),
drawn beside it, must give the same lines, segment by segment (styles and the meta a
DataTable puts on its cells included: screenshots are made of them), in every state that
styles a line differently; every key and click must move the cursor as it did; a step
repaints only the rows that changed; and what it leaves unpainted is what a whole repaint
would draw."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
from textual.containers import Horizontal
from textual.geometry import Region
from textual.widgets import DataTable

from hooktui.ui.app import HooktuiApp
from hooktui.ui.widgets.lower import LowerPanes
from hooktui.ui.widgets.tensor_table import TensorTable
from hooktui.ui.widgets.tensors import TensorsPane

from ui_helpers import recorded, run, wait_for

COLUMNS = ["tensor", "shape", "stats", "histogram"]
STYLES = ["", "bold red", "yellow", ""]


def _rows(seed: int, count: int = 6) -> list[list[Text]]:
    """Rows as the tensors pane makes them: a label (an arrow in a node firing's), a shape
    with ×, a statistics line whose length and style change from firing to firing, a
    sparkline of block characters (blanks for empty bins)."""
    rows = []
    for r in range(count):
        stats = f"μ {(seed * 7 + r) % 13 - 6.25:.{1 + (seed + r) % 3}f} σ {1 + seed % 5 * 0.125:g} [-{r}, {seed}]"
        rows.append([
            Text(f"grad_inputs[{r}] → the input args[{r}]" if (r + seed) % 3 == 0 else f"args[{r}]",
                 style="bold" if r % 4 == 1 else ""),
            Text("×".join(str(2 + (r + seed + d) % 7) for d in range(1 + r % 4)), style="yellow" if r == 2 else ""),
            Text(stats, style=STYLES[(r + seed) % 4]),
            Text("▁▂▃▅ █▇ ▁"[(r + seed) % 3:], style="cyan"),
        ])
    return rows


def _widths(rows: list[list[Text]], columns: list[str] = COLUMNS) -> list[int]:
    return [max([len(c), *(row[i].cell_len for row in rows)]) for i, c in enumerate(columns)]


class Tables(App):
    CSS = "TensorTable, DataTable { width: 1fr; height: 1fr; scrollbar-size: 1 1; }"

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield TensorTable(id="table")
            yield DataTable(cursor_type="row", zebra_stripes=False, id="stock")

    def fill(self, rows: list[list[Text]], widths: list[int] | None = None, columns: list[str] = COLUMNS,
             cursor: int = 0) -> None:
        widths = _widths(rows, columns) if widths is None else widths
        self.query_one(TensorTable).fill(columns, widths, rows, cursor)
        stock = self.query_one(DataTable)  # as hooktui/ui/widgets/tensors.py filled it before this table
        stock.clear(columns=True)
        for column, width in zip(columns, widths):
            stock.add_column(column, key=column, width=width)
        for r, row in enumerate(rows):
            stock.add_row(*row, key=str(r))
        if rows:
            stock.move_cursor(row=cursor, animate=False, scroll=True)


def _both(app: Tables) -> tuple[TensorTable, DataTable]:
    return app.query_one(TensorTable), app.query_one(DataTable)


def _lines(widget) -> list:
    return widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))


def _same(table: TensorTable, stock: DataTable) -> None:
    assert table.size == stock.size and table.scroll_offset == stock.scroll_offset
    assert table.cursor_row == stock.cursor_row
    assert table.virtual_size == stock.virtual_size
    drawn, expected = _lines(table), _lines(stock)
    assert [strip.text for strip in drawn] == [strip.text for strip in expected]
    assert drawn == expected  # segment by segment: styles, and the meta of a DataTable's cells


async def _settle(pilot) -> None:
    await pilot.pause()
    await pilot.pause()  # a DataTable measures its new rows on idle


async def _same_focused(pilot, table: TensorTable, stock: DataTable) -> None:
    """Each drawn with the focus, in turn, draws the same; then both without it."""
    pilot.app.set_focus(stock)
    await _settle(pilot)
    expected = _lines(stock)
    pilot.app.set_focus(table)
    await _settle(pilot)
    assert _lines(table) == expected
    pilot.app.set_focus(None)
    await _settle(pilot)
    _same(table, stock)


def test_the_table_draws_what_the_data_table_drew_in_each_state():
    async def go():
        app = Tables()
        async with app.run_test(size=(160, 16)) as pilot:
            table, stock = _both(app)
            app.fill(_rows(0))
            await _settle(pilot)
            await _same_focused(pilot, table, stock)
            for seed, cursor in ((1, 3), (2, 5), (3, 0)):  # other widths and styles each time, the cursor moved
                app.fill(_rows(seed), cursor=cursor)
                await _settle(pilot)
                await _same_focused(pilot, table, stock)
            # Cells it does not make itself but draws as a DataTable does: spans, centred, right-justified
            # with trailing blanks, longer than the column (cut), wide characters, and empty.
            odd = _rows(4, 3)
            odd[0][2] = Text.assemble(("μ ", "bold"), ("0.5", "italic red"))
            odd[1][0] = Text("args[1]", justify="center")
            odd[1][2] = Text("1.5  ", justify="right", style="yellow")
            odd[2][0] = Text("a much longer label than its column")
            odd[2][1] = Text("层×模块", style="yellow")
            odd[2][3] = Text("")
            app.fill(odd, widths=[12, 8, 20, 9])
            await _settle(pilot)
            await _same_focused(pilot, table, stock)
            # A firing with no tensors (the header alone), and no firing at all (no columns either).
            app.fill([], widths=[len(c) for c in COLUMNS])
            await _settle(pilot)
            await _same_focused(pilot, table, stock)
            app.fill([], widths=[], columns=[])
            await _settle(pilot)
            _same(table, stock)
            # Wider and taller than each half: scrolled down by the cursor, then right by the scrollbar.
            rows = _rows(5, 30)
            app.fill(rows, widths=[w + 12 for w in _widths(rows)])
            await _settle(pilot)
            assert table.show_horizontal_scrollbar and table.show_vertical_scrollbar
            for widget in (table, stock):
                widget.move_cursor(row=25)
            await _settle(pilot)
            assert table.scroll_offset.y > 0
            await _same_focused(pilot, table, stock)
            for widget in (table, stock):
                widget.scroll_to(x=9, animate=False)
            await _settle(pilot)
            assert table.scroll_offset.x == 9
            await _same_focused(pilot, table, stock)
            app.theme = "textual-light"  # the table keeps its styles between paints: not past a new theme
            await _settle(pilot)
            await _same_focused(pilot, table, stock)

    run(go())


def test_the_table_shows_the_hover_as_the_data_table_did():
    async def go():
        app = Tables()
        async with app.run_test(size=(160, 16)) as pilot:
            table, stock = _both(app)
            app.fill(_rows(1), cursor=5)  # not under the mouse: the cursor's colours would hide the hover's
            app.set_focus(None)
            await _settle(pilot)
            plain = _lines(table)
            for x, y in ((3, 3), (3, 0), (70, 4), (3, 3), (3, 12)):  # a row, the header, right of the last column, below the last row
                await pilot.hover(offset=(table.region.x + x, table.region.y + y))
                await pilot.pause()
                hovered = _lines(table)
                assert table.hover_row == (None if y >= 7 else y - 1)  # the header is row -1
                await pilot.hover(offset=(stock.region.x + x, stock.region.y + y))
                await pilot.pause()
                assert hovered == _lines(stock), (x, y)
                assert (hovered != plain) == (y < 7), (x, y)  # shown on the header and the rows only
            table.focus()
            await pilot.hover(offset=(table.region.x + 3, table.region.y + 4))
            await pilot.pause()
            assert table.hover_row == 3
            await pilot.press("down")  # a key hides the hover, as a DataTable's does
            await pilot.pause()
            assert table.hover_row is None

    run(go())


def test_keys_and_clicks_move_the_cursor_as_the_data_table_did():
    keys = ["down", "down", "pagedown", "pagedown", "end", "left", "home", "right", "ctrl+end", "pageup", "up",
            "ctrl+home", "up", "pagedown", "enter", "end", "down"]

    async def go():
        app = Tables()
        async with app.run_test(size=(160, 16)) as pilot:
            table, stock = _both(app)
            rows = _rows(2, 40)
            widths = [w + 15 for w in _widths(rows)]  # wider than the table: right, left, home and end scroll it
            paths = []
            for widget in (table, stock):
                app.fill(rows, widths=widths)
                widget.focus()
                await _settle(pilot)
                path = []
                for key in keys:
                    await pilot.press(key)
                    await pilot.pause()
                    path.append((key, widget.cursor_row, widget.scroll_offset))
                paths.append(path)
            assert paths[0] == paths[1]
            rows_visited = {row for _, row, _ in paths[0]}
            assert {0, 39} <= rows_visited and len(rows_visited) > 4  # ctrl+home/end, pages
            offsets = {offset for _, _, offset in paths[0]}
            assert {o.x for o in offsets} != {0} and {o.y for o in offsets} != {0}
            # A click on a row puts the cursor there; on the header, or below the rows, it does not move.
            app.fill(_rows(3), cursor=1)
            await _settle(pilot)
            for (x, y), row in (((5, 4), 3), ((40, 2), 1), ((5, 0), 1), ((5, 12), 1), ((70, 6), 5)):
                for widget in (table, stock):
                    await pilot.click(offset=(widget.region.x + x, widget.region.y + y))
                    await pilot.pause()
                assert table.cursor_row == stock.cursor_row == row, (x, y)

    run(go())


class Listening(App):
    CSS = "TensorTable { height: 10; }"

    def __init__(self) -> None:
        super().__init__()
        self.highlighted: list[int] = []

    def compose(self) -> ComposeResult:
        yield TensorTable()

    def on_tensor_table_row_highlighted(self, message: TensorTable.RowHighlighted) -> None:
        assert message.control is self.query_one(TensorTable)
        self.highlighted.append(message.cursor_row)


def test_the_table_says_which_row_the_cursor_moved_to():
    """A key, a click and move_cursor each post RowHighlighted with the new row, once, and
    nothing when the cursor stays; a fill does not (its caller chose the row)."""
    async def go():
        app = Listening()
        async with app.run_test(size=(100, 12)) as pilot:
            table = app.query_one(TensorTable)
            table.fill(COLUMNS, _widths(_rows(0)), _rows(0), cursor=2)
            table.focus()
            await pilot.pause()
            assert app.highlighted == [] and table.cursor_row == 2
            await pilot.press("down", "down", "up", "ctrl+home", "up")
            await pilot.pause()
            assert app.highlighted == [3, 4, 3, 0]
            await pilot.click(TensorTable, offset=(4, 1 + 5))
            await pilot.click(TensorTable, offset=(4, 1 + 5))  # the same row again: nothing new
            await pilot.pause()
            table.move_cursor(row=99)  # clamped to the last row
            table.move_cursor(row=5)
            await pilot.pause()
            assert app.highlighted == [3, 4, 3, 0, 5]
            table.move_cursor(row=1)
            table.fill(COLUMNS, _widths(_rows(1)), _rows(1), cursor=4)
            await pilot.pause()
            assert app.highlighted == [3, 4, 3, 0, 5, 1] and table.cursor_row == 4

    run(go())


def _drawn_rows(table: TensorTable) -> list[int]:
    """The content lines `table` renders from now on (the Line API's render_line)."""
    drawn: list[int] = []
    original = table.render_line
    table.render_line = lambda y: (drawn.append(y), original(y))[1]
    return drawn


def _screen(app) -> list:
    return [list(strip) for strip in app.screen._compositor.render_strips()]


async def _whole_repaint(app, pilot) -> list:
    for widget in app.screen.walk_children():
        widget.refresh()
    await pilot.pause()
    await pilot.pause()
    return _screen(app)


class One(App):
    CSS = "TensorTable { height: 12; }"

    def compose(self) -> ComposeResult:
        yield TensorTable()


def test_a_fill_repaints_the_rows_that_changed_and_never_the_blank_lines_below():
    async def go():
        app = One()
        async with app.run_test(size=(100, 16)) as pilot:
            table = app.query_one(TensorTable)
            rows = _rows(0, 5)
            widths = _widths(rows)
            table.fill(COLUMNS, widths, rows)
            await pilot.pause()
            drawn = _drawn_rows(table)
            changed = [list(row) for row in rows]
            changed[3][2] = Text("μ 9.9", style="bold red")  # one cell, its width kept: its row only (line 4)
            table.fill(COLUMNS, widths, changed)
            await pilot.pause()
            assert sorted(set(drawn)) == [4]
            drawn.clear()
            table.fill(COLUMNS, widths, changed, cursor=2)  # the cursor moved: its old row and its new one
            await pilot.pause()
            assert sorted(set(drawn)) == [1, 3]
            drawn.clear()
            table.fill(COLUMNS, widths, changed[:3], cursor=2)  # two rows fewer: their lines, blank now
            await pilot.pause()
            assert sorted(set(drawn)) == [4, 5]
            drawn.clear()
            table.fill(COLUMNS, [w + 1 for w in widths], changed[:2])  # other widths: the header, the rows held or now
            await pilot.pause()
            assert sorted(set(drawn)) == [0, 1, 2, 3]
            drawn.clear()
            table.fill(COLUMNS, [w + 1 for w in widths], changed[:2])  # the same again: nothing
            await pilot.pause()
            assert drawn == []
            assert _screen(app) == await _whole_repaint(app, pilot)

    run(go())


def test_every_fill_leaves_the_screen_a_whole_repaint_would_draw_at_every_size():
    """Fills that change cells, widths, columns and the number of rows, with the cursor
    and the mouse on the table, scrolled or not: after each, at 80x24, 120x40 and 200x60
    and after a resize, the screen is what painting everything again draws."""
    extra = ["tensor", "shape", "stats", "histogram", "dtype", "device"]

    def fills():
        for seed in range(4):
            yield COLUMNS, _rows(seed, 4 + seed), seed
        rows = [row + [Text("float32"), Text(f"cuda:{r}")] for r, row in enumerate(_rows(7, 30))]
        yield extra, rows, 28  # taller than the table: scrolled to the cursor
        yield extra, rows[:29], 27
        yield COLUMNS, _rows(8, 3), 1
        yield [], [], 0

    async def go(size: tuple[int, int]):
        app = One()
        async with app.run_test(size=size) as pilot:
            table = app.query_one(TensorTable)
            await pilot.hover(TensorTable, offset=(2, 2))
            for step, (columns, rows, cursor) in enumerate(fills()):
                table.fill(columns, _widths(rows, columns), rows, cursor)
                await pilot.pause()
                assert _screen(app) == await _whole_repaint(app, pilot), (size, step)
            table.fill(COLUMNS, [w + 40 for w in _widths(_rows(9))], _rows(9), 2)
            await pilot.pause()
            table.scroll_to(x=30, animate=False)
            await pilot.pause()
            for step in range(3):  # scrolled right, the cells and widths change: it stays scrolled
                rows = _rows(9 + step)
                table.fill(COLUMNS, [w + 40 - step for w in _widths(rows)], rows, 2 + step)
                await pilot.pause()
                assert table.scroll_offset.x == 30
                assert _screen(app) == await _whole_repaint(app, pilot), (size, "scrolled", step)
            await pilot.resize_terminal(size[0] - 7, size[1] - 3)
            await pilot.pause()
            for step in range(3):
                table.fill(COLUMNS, _widths(_rows(step)), _rows(step), step)
                await pilot.pause()
                assert _screen(app) == await _whole_repaint(app, pilot), (size, "resized", step)

    for size in ((80, 24), (120, 40), (200, 60)):
        run(go(size))


def test_no_layout_of_the_screen_unless_a_scrollbar_appears():
    async def go():
        app = One()
        async with app.run_test(size=(100, 16)) as pilot:
            table = app.query_one(TensorTable)
            table.fill(COLUMNS, _widths(_rows(0, 3)), _rows(0, 3))
            await pilot.pause()
            layouts = []
            screen = app.screen
            original = screen._refresh_layout
            screen._refresh_layout = lambda *a, **k: (layouts.append(1), original(*a, **k))[1]
            for seed in range(1, 5):  # other widths and numbers of rows, all fitting: no layout
                rows = _rows(seed, 2 + seed)
                table.fill(COLUMNS, _widths(rows), rows)
                await pilot.pause()
            assert not layouts
            rows = _rows(5, 20)
            table.fill(COLUMNS, _widths(rows), rows)  # taller than the table: the vertical scrollbar appears
            await pilot.pause()
            await pilot.pause()
            assert layouts and table.show_vertical_scrollbar and table.virtual_size.height == 21
            layouts.clear()
            rows = _rows(6, 25)
            table.fill(COLUMNS, _widths(rows), rows, cursor=24)  # still a scrollbar: told without a layout
            await pilot.pause()
            await pilot.pause()
            assert not layouts and table.scroll_offset.y == 25 + 1 - table.scrollable_content_region.height
            assert table.vertical_scrollbar.window_virtual_size == 26

    run(go())


def test_the_tensors_pane_picks_the_tensor_by_key_and_click_and_keeps_its_row_across_steps():
    """In the app: down and a click choose the tensor the values pane shows; a step to the
    next firing keeps the cursor on the tensor of the same name; the table draws no cell
    through Rich at any step."""
    info, events = recorded("transformer.py")
    rich_cells = []
    original = TensorTable._rich_cell

    def counted(self, *args, **kwargs):
        rich_cells.append(args)
        return original(self, *args, **kwargs)

    def shows(label: str, name: str) -> bool:  # a label cut to its column ends in …
        return label.startswith(name) or (label.endswith("…") and name.startswith(label[:-1]))

    async def go():
        TensorTable._rich_cell = counted
        try:
            app = HooktuiApp(recorded=(info, events), show_timings=False)
            async with app.run_test(size=(120, 40), notifications=False) as pilot:
                start = next(i for i, e in enumerate(events) if len(e.tensors) >= 4 and e.phase == "forward"
                             and len(events[i + 1].tensors) > len(e.tensors))
                app.goto(start, follow=False)
                await pilot.pause()
                pane = app.query_one(TensorsPane)
                lower = app.query_one(LowerPanes)
                table = pane.table
                assert table.row_count == len(events[start].tensors) and table.cursor_row == 0
                app.action_pane("tensors")
                await wait_for(pilot, lambda: app.focused is table, "the table focused")
                await pilot.press("down")
                await wait_for(pilot, lambda: lower.tensor_position == 1, "the second tensor chosen")
                assert lower.tensor is events[start].tensors[1]
                await pilot.click(TensorTable, offset=(3, 1 + 2))
                await wait_for(pilot, lambda: lower.tensor_position == 2, "the third tensor chosen by a click")
                assert table.cursor_row == 2 and lower.tensor is events[start].tensors[2]
                name = events[start].tensors[2].name
                await pilot.press("n")  # the next firing has that tensor too: the cursor stays on it
                await wait_for(pilot, lambda: app.history.cursor == start + 1, "the next firing")
                await pilot.pause()
                assert [t.name for t in app.current.tensors].index(name) == table.cursor_row == 2
                assert shows(table.get_row_at(2)[0].plain, name)
                for key in "nnNNNNNN":
                    await pilot.press(key)
                    await pilot.pause()
                    assert table.row_count == len(app.current.tensors)
                    assert shows(table.get_row_at(table.cursor_row)[0].plain, lower.tensor.name)
                assert rich_cells == []
        finally:
            TensorTable._rich_cell = original

    run(go())
