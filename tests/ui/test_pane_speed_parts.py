"""The pieces that make a step cheap to draw, checked against what they replace: the
segments of a short cell (the values grid's and the tensors table's) against Rich's own
rendering, the TextView against the width it shows, without a layout of the screen when
its contents change. (The tensors table against a stock DataTable: test_tensor_table.py.)"""

from __future__ import annotations

from rich.console import Console
from rich.padding import Padding
from rich.style import Style
from rich.text import Text
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.renderables.styled import Styled
from textual.widgets import Static

from hooktui.ui.widgets.line_cells import cell_segments
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


def test_set_text_counts_a_one_line_text_without_wrapping_it_and_lays_out_when_the_lines_change(monkeypatch):
    from hooktui.ui.widgets.text_update import set_text

    async def go():
        app = Titles()
        async with app.run_test(size=(40, 5)) as pilot:
            title = app.query_one("#title", Static)
            set_text(title, Text("grad_input[0] (4, 8)"))
            await pilot.pause()
            layouts, wraps = [], []
            original_update, original_wrap = title.update, Text.wrap
            title.update = lambda content, layout=True: (layouts.append(layout), original_update(content, layout=layout))[1]
            monkeypatch.setattr(Text, "wrap", lambda self, *a, **k: (wraps.append(self.plain), original_wrap(self, *a, **k))[1])
            set_text(title, Text("grad_input[1] (4, 8): 12 values"))  # one line, fits: the same height
            await pilot.pause()
            assert layouts == [False] and wraps == []  # counted as one line without wrapping it
            long = "grad_input[1] (4, 8): " + "many words " * 6  # wraps to more lines than the width holds
            set_text(title, Text(long))
            await pilot.pause()
            assert layouts == [False, True] and wraps  # more lines: wrapped to count, and laid out
            assert title.size.height == len(Text(long).wrap(app.console, title.content_size.width)) > 1
            wrapped = len(wraps)
            set_text(title, Text("two\nlines"))  # a newline: wrapped to count
            await pilot.pause()
            assert len(wraps) == wrapped + 1
            set_text(title, Text("one line again"))
            await pilot.pause()
            assert layouts[-1] is True and title.size.height == 1

    run(go())
