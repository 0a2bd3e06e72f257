"""The values grid against the DataTable it replaced: a stock DataTable filled the way the
values pane filled one (a fixed column of row indices, columns sized to their cells, cell
cursor), drawn beside it, must show the same characters in the same styles cell by cell,
in every state that styles a cell differently; and every key does what it did."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
from textual.containers import Horizontal
from textual.coordinate import Coordinate
from textual.geometry import Region
from textual.widgets import DataTable

from hooktui.ui.widgets.values import cell
from hooktui.ui.widgets.values_grid import ValuesGrid

from ui_helpers import run


class Grids(App):
    CSS = """
    DataTable, ValuesGrid { width: 1fr; height: 1fr; scrollbar-size: 1 1; }
    """

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield ValuesGrid(id="grid")
            yield DataTable(cursor_type="cell", fixed_columns=1, show_row_labels=False, id="stock")

    def fill(self, cells: list[list[Text]]) -> None:
        self.query_one(ValuesGrid).fill(cells)
        table = self.query_one(DataTable)  # as hooktui/ui/widgets/values.py filled it before the grid
        table.clear(columns=True)
        table.add_column("", key="row", width=len(str(len(cells) - 1)))
        for c in range(max((len(row) for row in cells), default=0)):
            table.add_column(str(c), key=str(c), width=max([len(str(c)), *(row[c].cell_len for row in cells if c < len(row))]))
        for r, row in enumerate(cells):
            table.add_row(Text(str(r), style="bold"), *row)
        table.move_cursor(row=0, column=1, animate=False)


def _values(rows: int, cols: int, seed: int = 0) -> list[list[Text]]:
    """Cells as the values pane makes them: zeros dim, nan/inf bold red, widths varying."""
    special = [0.0, float("nan"), float("inf"), -float("inf")]
    return [[cell(special[(r + c + seed) % 4] if (r * cols + c + seed) % 7 == 0 else ((r * cols + c + seed) % 23 - 11.5) * 10 ** ((c % 4) - 2))
             for c in range(cols)] for r in range(rows)]


def _cells(widget) -> list[list[tuple]]:
    """Each cell of the widget's lines: its character and its style without the meta
    (a DataTable's segments say which cell they are for its clicks; the grid's do not)."""
    lines = widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
    out = []
    for strip in lines:
        row = []
        for segment in strip:
            style = segment.style.clear_meta_and_links() if segment.style else None
            row += [(char, style) for char in segment.text]
        out.append(row)
    return out


def _same(grid: ValuesGrid, stock: DataTable) -> None:
    assert grid.size == stock.size and grid.scroll_offset == stock.scroll_offset
    assert grid.cursor_coordinate == stock.cursor_coordinate
    drawn, expected = _cells(grid), _cells(stock)
    assert ["".join(c for c, _ in row) for row in drawn] == ["".join(c for c, _ in row) for row in expected]
    assert drawn == expected


async def _same_focused(pilot, grid: ValuesGrid, stock: DataTable) -> None:
    """Each drawn with the focus, in turn, draws the same; then both without it."""
    pilot.app.set_focus(stock)
    await pilot.pause()
    expected = _cells(stock)
    pilot.app.set_focus(grid)
    await pilot.pause()
    assert _cells(grid) == expected
    pilot.app.set_focus(None)
    await pilot.pause()
    _same(grid, stock)


def _both(app: Grids):
    return app.query_one(ValuesGrid), app.query_one(DataTable)


def test_grid_draws_what_the_data_table_drew_in_each_state():
    async def go():
        app = Grids()
        async with app.run_test(size=(100, 14)) as pilot:
            app.fill(_values(30, 25))  # wider and taller than each half
            await pilot.pause()
            grid, stock = _both(app)
            assert grid.show_horizontal_scrollbar and grid.show_vertical_scrollbar
            await _same_focused(pilot, grid, stock)
            for row, column in ((1, 0), (20, 22), (29, 24), (3, 2)):  # the fixed column; scrolled down and right; back
                for widget in (grid, stock):
                    widget.move_cursor(row=row, column=column)
                await pilot.pause()
                await _same_focused(pilot, grid, stock)
            assert grid.scroll_offset.x > 0 and grid.scroll_offset.y > 0
            # Scrolled by the scrollbars, away from the cursor.
            for widget in (grid, stock):
                widget.scroll_to(x=7, y=5, animate=False)
            await pilot.pause()
            _same(grid, stock)
            # A small grid: the space right of the last column, blank lines below.
            app.fill(_values(3, 4, seed=2))
            await pilot.pause()
            await _same_focused(pilot, grid, stock)
            app.theme = "textual-light"  # the grid keeps its styles between paints: not past a new theme
            await pilot.pause()
            await _same_focused(pilot, grid, stock)

    run(go())


def test_grid_hover_as_the_data_table_showed_it():
    async def go():
        app = Grids()
        async with app.run_test(size=(100, 14)) as pilot:
            app.fill(_values(8, 5))
            app.set_focus(None)  # focus tints a grid: compare them alike
            await pilot.pause()
            grid, stock = _both(app)
            grid_x, stock_x = grid.region.x, stock.region.x
            plain = _cells(grid)
            for x, y in ((9, 3), (1, 2), (9, 0), (45, 3), (9, 12)):  # a value, a row index, a column index, right of the last column, below the last row
                await pilot.hover(offset=(grid_x + x, y))
                await pilot.pause()
                hovered = _cells(grid)
                await pilot.hover(offset=(stock_x + x, y))
                await pilot.pause()
                assert hovered == _cells(stock), (x, y)
                assert (hovered != plain) == (x < 40 and y < 9), (x, y)  # shown on a cell only
                if hovered != plain:
                    assert grid.hover_coordinate == stock.hover_coordinate

    run(go())


def test_grid_keys_and_clicks_move_the_cursor_as_the_data_table_did():
    keys = ["right", "right", "down", "pagedown", "pagedown", "end", "left", "home", "right", "ctrl+end", "pageup",
            "ctrl+home", "up", "left", "end", "pageup", "enter"]

    async def go():
        app = Grids()
        async with app.run_test(size=(100, 14)) as pilot:
            app.fill(_values(40, 25))
            await pilot.pause()
            grid, stock = _both(app)
            paths = []
            for widget in (grid, stock):
                app.fill(_values(40, 25))
                widget.focus()
                await pilot.pause()
                path = []
                for key in keys:
                    await pilot.press(key)
                    await pilot.pause()
                    path.append((key, widget.cursor_coordinate, widget.scroll_offset))
                paths.append(path)
            assert paths[0] == paths[1]
            cursors = {cursor for _, cursor, _ in paths[0]}
            assert {c.column for c in cursors} >= {0, 24} and {c.row for c in cursors} >= {0, 39}  # home/end, ctrl+home/end
            assert {offset.y for _, _, offset in paths[0]} != {0} and {offset.x for _, _, offset in paths[0]} != {0}
            # A click on a cell puts the cursor there (the fixed column's too); on the header it does not move.
            app.fill(_values(40, 25))
            await pilot.pause()
            for (x, y), row in (((9, 3), 2), ((2, 5), 4), ((9, 0), 4)):
                for widget in (grid, stock):
                    await pilot.click(offset=(widget.region.x + x, widget.region.y + y))
                    await pilot.pause()
                assert grid.cursor_coordinate == stock.cursor_coordinate and grid.cursor_coordinate.row == row, (x, y)
            assert grid.cursor_coordinate.column == 0

    run(go())


def test_a_grid_filled_while_hidden_scrolls_its_cursor_into_view_once_shown():
    async def go():
        app = Grids()
        async with app.run_test(size=(100, 14)) as pilot:
            grid, _ = _both(app)
            grid.display = False
            await pilot.pause()
            grid.fill(_values(30, 25))
            grid.move_cursor(row=29, column=24)  # no size to scroll in yet
            await pilot.pause()
            assert grid.scroll_offset == (0, 0)
            grid.display = True
            await pilot.pause()
            await pilot.pause()
            assert grid.scroll_offset.x > 0 and grid.scroll_offset.y > 0
            assert grid.cursor_coordinate == Coordinate(29, 24)

    run(go())
