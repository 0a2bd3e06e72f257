"""The pieces that make a step cheap to draw, checked against what they replace: the
segments of a short cell (the values grid's) against Rich's own rendering, a PaneTable
against a stock DataTable, the TextView against the width it shows, and neither asking for
a layout of the screen when its contents change."""

from __future__ import annotations

from rich.console import Console
from rich.padding import Padding
from rich.style import Style
from rich.text import Text
from textual.app import App, ComposeResult
from textual.containers import Horizontal
from textual.geometry import Region
from textual.renderables.styled import Styled
from textual.widgets import DataTable, Static

from hooktui.ui.widgets.pane_table import PaneTable, cell_segments
from hooktui.ui.widgets.text_view import TextView

from ui_helpers import run


def test_cell_segments_are_the_segments_rich_makes():
    """What `console.render_lines(Styled(Padding(cell, (0, padding)), pre, post), no_wrap,
    height 1, width)` gives, for a one-line Text without spans that fits its cell."""
    console = Console(width=80, color_system="truecolor", force_terminal=True)
    pre = Style.parse("white on #202020") + Style.from_meta({"row": 2, "column": 3})
    cells = [Text("-0.1234", justify="right"), Text("0", style="dim", justify="right"), Text("nan", style="bold red", justify="right"),
             Text("grad_input[0]", style="bold"), Text("a → b", justify="left"), Text(""), Text("1×8", style=Style(italic=True))]
    for cell in cells:
        for width, padding in ((16, 1), (len(cell.plain) + 2, 1), (max(1, len(cell.plain)), 0)):
            for post in (Style(), Style(bold=True), Style(bgcolor="blue")):
                expected = console.render_lines(Styled(Padding(cell, (0, padding)), pre_style=pre, post_style=post),
                                                console.options.update_dimensions(width, 1).update(no_wrap=True))
                edge = pre + post
                own = (pre + console.get_style(cell.style) + post) if cell.style else edge
                spare = width - 2 * padding - cell.cell_len
                assert [cell_segments(cell.plain, cell.justify, spare, padding, edge, own)] == expected, (cell, width, padding, post)


class Tables(App):
    CSS = "DataTable { width: 1fr; height: 1fr; }"

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield PaneTable(cursor_type="cell", fixed_columns=1, id="pane")
            yield DataTable(cursor_type="cell", fixed_columns=1, id="stock")

    def fill(self, rows: list[list[Text]]) -> None:
        for table in self.query(DataTable):
            table.clear(columns=True)
            table.add_column("", key="row", width=1)
            for c in range(len(rows[0])):
                table.add_column(str(c), key=str(c), width=max(len(str(c)), *(r[c].cell_len for r in rows)))
            for r, row in enumerate(rows):
                table.add_row(Text(str(r), style="bold"), *row)


def _grid(seed: int, cols: int = 14) -> list[list[Text]]:
    return [[Text(f"{(seed * 7 + r * cols + c) % 23 - 11.5:.3g}", style="dim" if c % 5 == 0 else "", justify="right")
             for c in range(cols)] for r in range(4)]


def test_pane_table_draws_what_a_data_table_draws_without_a_layout():
    async def go():
        app = Tables()
        async with app.run_test(size=(100, 12)) as pilot:
            app.set_focus(None)  # focus tints a table: compare them alike
            layouts = []
            screen = app.screen
            original = screen._refresh_layout
            screen._refresh_layout = lambda *a, **k: (layouts.append(1), original(*a, **k))[1]
            for seed in range(3):
                app.fill(_grid(seed, cols=3 + 5 * seed))  # each fill has other columns and widths
                await pilot.pause()
                await pilot.pause()
                pane, stock = app.query_one("#pane", DataTable), app.query_one("#stock", DataTable)
                assert pane.virtual_size == stock.virtual_size
                region = Region(0, 0, pane.size.width, pane.size.height)
                assert pane.render_lines(region) == stock.render_lines(region)
                pane.move_cursor(row=2, column=3)
                stock.move_cursor(row=2, column=3)
                await pilot.pause()
                assert pane.render_lines(region) == stock.render_lines(region)
            # The stock table asked for layouts; the pane table's fills alone would not have.
            assert layouts

        app = Tables()
        async with app.run_test(size=(100, 12)) as pilot:
            app.query_one("#stock").remove()
            await pilot.pause()
            app.fill(_grid(0, cols=3))
            await pilot.pause()
            layouts = []
            screen = app.screen
            original = screen._refresh_layout
            screen._refresh_layout = lambda *a, **k: (layouts.append(1), original(*a, **k))[1]
            for seed in range(1, 4):
                app.fill(_grid(seed, cols=3 + seed))  # fits without a horizontal scrollbar: no layout
                await pilot.pause()
                await pilot.pause()
            assert not layouts
            app.fill(_grid(9, cols=40))  # a horizontal scrollbar appears: that needs a layout
            await pilot.pause()
            await pilot.pause()
            assert layouts and app.query_one(PaneTable).show_horizontal_scrollbar

    run(go())


def _same_drawing(pane: DataTable, stock: DataTable) -> None:
    region = Region(0, 0, pane.size.width, pane.size.height)
    drawn, expected = pane.render_lines(region), stock.render_lines(region)
    assert [strip.text for strip in drawn] == [strip.text for strip in expected]
    assert drawn == expected  # segment by segment, styles and the meta clicks read included


def test_pane_table_rows_match_a_data_table_focused_hovered_scrolled_and_by_row():
    """PaneTable draws what a stock DataTable draws in every state that styles a cell
    differently: focus, the cursor on the fixed column, hover, scrolled both ways, a row
    cursor (the tensors pane), and a cell with spans."""
    async def go():
        app = Tables()
        async with app.run_test(size=(100, 12)) as pilot:
            rows = _grid(5, cols=30) + _grid(6, cols=30) + _grid(7, cols=30)  # wider and taller than the table
            rows[1][2] = Text.assemble(("1", "bold"), ("2", "italic"), justify="right")
            app.fill(rows)
            await pilot.pause()
            pane, stock = app.query_one("#pane", DataTable), app.query_one("#stock", DataTable)
            assert pane.show_horizontal_scrollbar and pane.show_vertical_scrollbar
            for table in (pane, stock):
                table.move_cursor(row=1, column=0)  # the fixed column: its own cursor style
            await pilot.pause()
            await _same_focused(pilot, pane, stock)
            app.set_focus(None)
            await pilot.pause()
            _same_drawing(pane, stock)
            for table in (pane, stock):
                table.move_cursor(row=11, column=25)  # scrolls both ways
                table._set_hover_cursor(True)
                table.hover_coordinate = table.hover_coordinate._replace(row=10, column=24)  # on screen
            await pilot.pause()
            assert pane.scroll_offset == stock.scroll_offset and pane.scroll_offset.x > 0 and pane.scroll_offset.y > 0
            _same_drawing(pane, stock)
            for table in (pane, stock):
                table.cursor_type = "row"
                table.move_cursor(row=3)
            await pilot.pause()
            _same_drawing(pane, stock)
            await _same_focused(pilot, pane, stock)

    run(go())


async def _same_focused(pilot, pane: DataTable, stock: DataTable) -> None:
    """Each table drawn with the focus, in turn, draws the same."""
    pilot.app.set_focus(stock)
    await pilot.pause()
    focused_stock = stock.render_lines(Region(0, 0, stock.size.width, stock.size.height))
    pilot.app.set_focus(pane)
    await pilot.pause()
    assert pane.render_lines(Region(0, 0, pane.size.width, pane.size.height)) == focused_stock


class Texts(App):
    CSS = "TextView { height: 6; width: 30; padding: 0 1; scrollbar-size: 1 1; }"

    def compose(self) -> ComposeResult:
        yield TextView()


def test_text_view_wraps_to_what_it_shows_and_scrolls_without_layouts():
    words = " ".join(f"word{i}" for i in range(60))

    async def go():
        app = Texts()
        async with app.run_test(size=(40, 10)) as pilot:
            view = app.query_one(TextView)
            view.set_renderable(Text("short"))
            await pilot.pause()
            assert not view.show_vertical_scrollbar and view.virtual_size.height == 1
            layouts = []
            screen = app.screen
            original = screen._refresh_layout
            screen._refresh_layout = lambda *a, **k: (layouts.append(1), original(*a, **k))[1]
            view.set_renderable(Text(words))
            await pilot.pause()
            await pilot.pause()
            assert view.show_vertical_scrollbar and layouts  # the bar appeared: one layout
            # Wrapped to the cells on screen (inside the padding, beside the bar).
            shown_width = view.scrollable_content_region.width
            assert shown_width == view.size.width - 1
            expected = len(Text(words).wrap(app.console, shown_width))
            assert view.virtual_size.height == expected
            shown = [strip.text.strip() for strip in view.render_lines(Region(0, 0, view.outer_size.width, 6))]
            assert shown[0].startswith("word0 word1 word2")
            assert all(len(line) <= shown_width for line in shown)
            layouts.clear()
            view.set_renderable(Text(words.upper()))  # as long, still a bar: no layout
            await pilot.pause()
            await pilot.pause()
            assert not layouts
            view.scroll_to(y=expected, animate=False)
            await pilot.pause()
            last = [strip.text for strip in view.render_lines(Region(0, 0, view.outer_size.width, 6))]
            assert "WORD59" in "".join(last)

    run(go())


class Titles(App):
    def compose(self) -> ComposeResult:
        yield Static(id="title")


def test_set_text_leaves_the_same_text_alone_and_draws_any_difference():
    from hooktui.ui.widgets.text_update import set_text

    async def go():
        app = Titles()
        async with app.run_test(size=(40, 5)) as pilot:
            title = app.query_one("#title", Static)
            refreshes = []
            original = title.refresh
            title.refresh = lambda *a, **k: (refreshes.append(k), original(*a, **k))[1]
            set_text(title, Text("grad_input[0] (4, 8)", style="bold"))
            await pilot.pause()
            assert len(refreshes) == 1
            set_text(title, Text("grad_input[0] (4, 8)", style="bold"))  # equal, a new object
            assert len(refreshes) == 1
            for different in (Text("grad_input[0] (4, 8)"), Text("grad_input[0] (4, 8)", style="bold", justify="right"),
                              Text.assemble(("grad_input[0]", "bold"), " (4, 8)"), Text("grad_input[1] (4, 8)")):
                set_text(title, different)
                await pilot.pause()
                assert str(title.render()) == different.plain
            assert len(refreshes) == 5
            title.update("set elsewhere")  # not through set_text: the next set_text draws again
            set_text(title, Text("grad_input[1] (4, 8)"))
            await pilot.pause()
            assert str(title.render()) == "grad_input[1] (4, 8)"

    run(go())
