"""The tensors pane's table, drawn a line at a time (Textual's Line API), not by a DataTable.

At each step the tensors pane gets the next firing's rows. A DataTable renders every cell
through Rich (`Styled(Padding(cell))`) and, on a refill, clears all its caches, its lines'
included; and the statistics text changes length at almost every firing, so the columns'
widths change and the table was refilled at nearly every step: 20-25% of a step's paint
(docs/benchmarks.md). This table holds only what the tensors pane shows, one-line texts in
columns of given widths under a header row, and puts each visible line straight into a
Strip from those texts (line_cells.py) with the styles of this paint. At a new fill it
repaints the rows whose cells changed, and the header with every row held before or now
when the columns or their widths change; never the blank lines below.

It draws what the DataTable it replaces drew (cursor_type="row", no zebra stripes: same
characters in the same cells, the same styles, even the same segments and the meta a
DataTable's segments carry, so screenshots are unchanged: tests/ui/test_tensor_table.py
draws both), and keeps its keys (up/down, page up/down, ctrl+home/end for the first and last
row, home/end and left/right to scroll sideways), its click on a row, its hover, and a
RowHighlighted message when the cursor moves to another row.

A new virtual size costs no layout of the screen unless a scrollbar appears or goes: the
scrollbars are told here (Textual's public API only, as the DataTable it replaces did:
tests/ui/test_pane_table_public.py).
"""

from __future__ import annotations

from rich.cells import cell_len, set_cell_size
from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size, Spacing
from textual.message import Message
from textual.renderables.styled import Styled
from textual.scroll_view import ScrollView
from textual.strip import Strip

from .line_cells import KeptPaintStyles, cell_segments

HEADER = -1  # the row index of the header, as a DataTable numbers it
PADDING = 1  # a space each side of every column, as a DataTable pads
_JUSTIFIED = ("right", "left", "default", None)  # the ways of laying out a cell done here
_CROPPED = (None, "fold", "crop")  # overflows that cut a long text where the cell ends


def _drawn_alike(a: list[Text], b: list[Text]) -> bool:
    """Cells that draw the same (Text's own == leaves out its style and justification)."""
    return len(a) == len(b) and all(
        x.plain == y.plain and x.style == y.style and x.justify == y.justify and x.spans == y.spans
        and x.overflow == y.overflow for x, y in zip(a, b))


class TensorTable(KeptPaintStyles, ScrollView, can_focus=True):
    ALLOW_SELECT = False

    BINDINGS = [  # a DataTable's, as its row cursor uses them
        Binding("enter", "select_cursor", "Select", show=False),
        Binding("up", "cursor_up", "Cursor up", show=False),
        Binding("down", "cursor_down", "Cursor down", show=False),
        Binding("right", "cursor_right", "Cursor right", show=False),
        Binding("left", "cursor_left", "Cursor left", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("ctrl+home", "scroll_top", "Top", show=False),
        Binding("ctrl+end", "scroll_bottom", "Bottom", show=False),
        Binding("home", "scroll_home", "Home", show=False),
        Binding("end", "scroll_end", "End", show=False),
    ]

    COMPONENT_CLASSES = {
        "tensor-table--header", "tensor-table--header-hover", "tensor-table--cursor", "tensor-table--hover",
    }

    # A DataTable's look (textual 8.x DEFAULT_CSS), for the parts this table has.
    DEFAULT_CSS = """
    TensorTable {
        background: $surface;
        color: $foreground;
        height: auto;
        max-height: 100%;
        &:focus {
            background-tint: $foreground 5%;
            & > .tensor-table--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .tensor-table--header { background-tint: $foreground 5%; }
        }
        & > .tensor-table--header { text-style: bold; background: $panel; color: $foreground; }
        &:ansi > .tensor-table--header { background: ansi_bright_blue; color: ansi_default; }
        & > .tensor-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        & > .tensor-table--header-hover { background: $accent 30%; }
        & > .tensor-table--hover { background: $block-hover-background; }
    }
    """

    class RowHighlighted(Message):
        """The cursor moved to another row (a key, a click, `move_cursor`); not sent by `fill`,
        whose caller chose the row."""

        def __init__(self, table: TensorTable, cursor_row: int) -> None:
            super().__init__()
            self.table = table
            self.cursor_row = cursor_row

        @property
        def control(self) -> TensorTable:
            return self.table

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._labels: list[Text] = []  # the header's cells
        self._widths: list[int] = []  # each column's width on screen, padding included
        self._total = 0  # their sum
        self._rows: list[list[Text]] = []
        self._cursor_row = 0
        self._hover_row = 0  # HEADER for the header
        self._hover_shown = False  # the mouse moved over a row since the last key
        self._scroll_pending = False  # the cursor is to be scrolled into view once the table has a size
        self._layout_answered = False  # a new virtual size was answered here (see watch_virtual_size)
        self._sizing = False  # fill is setting the virtual size: its whole repaint is fill's to choose
        self._metas: dict[tuple[int, int], Style] = {}  # a DataTable's meta of each cell (row, column)

    # -- contents --------------------------------------------------------------------------
    def fill(self, columns: list[str], widths: list[int], rows: list[list[Text]], cursor: int = 0) -> None:
        """Show `rows` (one-line texts, one a column) under the header `columns`, each column
        `widths` cells wide plus its padding, and the cursor on row `cursor`. Repaints the
        rows whose cells changed, or, when the columns or their widths changed, the header
        and every row held before or now; never the blank lines below them."""
        labels = [Text(column) for column in columns]
        widths = [width + 2 * PADDING for width in widths]
        new_columns = widths != self._widths or not _drawn_alike(labels, self._labels)
        old_rows, old_cursor = self._rows, self._cursor_row
        self._labels, self._widths, self._total, self._rows = labels, widths, sum(widths), [list(row) for row in rows]
        self._cursor_row = max(0, min(cursor, len(self._rows) - 1))
        if self._hover_shown and self._hover_row >= len(self._rows):
            self._hover_shown = False  # the mouse is over a blank line now
            self._refresh_row(self._hover_row)
        self._set_virtual_size(Size(self._total, len(self._rows) + 1))
        if new_columns:  # the header and every row held before or now, as far as they are on screen
            lines = 1 + max(len(self._rows), len(old_rows)) - round(self.scroll_y)
            self.refresh(Region(0, 0, max(self.size.width, self._total), max(1, lines)))
        else:
            for row in range(max(len(self._rows), len(old_rows))):
                if row >= len(self._rows) or row >= len(old_rows) or not _drawn_alike(self._rows[row], old_rows[row]):
                    self._refresh_row(row)
        if self._cursor_row != old_cursor:
            self._refresh_row(old_cursor)
            self._refresh_row(self._cursor_row)
        self._scroll_cursor_into_view()

    def clear(self) -> None:
        self.fill([], [], [])

    @property
    def row_count(self) -> int:
        return len(self._rows)

    @property
    def column_labels(self) -> list[str]:
        return [label.plain for label in self._labels]

    def get_row_at(self, row: int) -> list[Text]:
        return list(self._rows[row])

    @property
    def cursor_row(self) -> int:
        return self._cursor_row

    @property
    def hover_row(self) -> int | None:
        """The row the mouse shows (HEADER for the header), None when it shows none."""
        return self._hover_row if self._hover_shown else None

    def move_cursor(self, *, row: int, animate: bool = False, scroll: bool = True) -> None:
        """Put the cursor on `row` (clamped to the table). As a DataTable's, a cursor that
        moves is scrolled into view whatever `scroll` says; `scroll` also does it when it stays."""
        if not self._set_cursor(row) and scroll:
            self._scroll_cursor_into_view(animate=animate)

    def _set_cursor(self, row: int) -> bool:
        """Move the cursor to `row` (clamped); True if it moved (then it is scrolled into view)."""
        row = max(0, min(row, len(self._rows) - 1))
        old, self._cursor_row = self._cursor_row, row
        if old == row:
            return False
        self._refresh_row(old)
        self._refresh_row(row)
        self.post_message(self.RowHighlighted(self, row))
        self._scroll_cursor_into_view()
        return True

    def _scroll_cursor_into_view(self, animate: bool = False) -> None:
        if not self.size:  # hidden or not laid out yet: scroll when it gets a size
            self._scroll_pending = True
            return
        self._scroll_pending = False
        if not self._rows:
            return
        # A DataTable's region for a row cursor: the row's line from where the view is scrolled to.
        region = Region(int(self.scroll_x), 1 + self._cursor_row, max(self.size.width, self._total), 1)
        self.scroll_to_region(region, animate=animate, spacing=Spacing(1, 0, 0, 0), force=True)

    def on_resize(self, _: events.Resize) -> None:
        if self._scroll_pending:
            self._scroll_cursor_into_view()

    def _refresh_row(self, row: int) -> None:
        """Repaint the line of `row` (HEADER for the header), where it is on screen."""
        y = 0 if row == HEADER else row + 1 - round(self.scroll_y)
        if 0 <= y < self.size.height:
            self.refresh(Region(0, y, max(self.size.width, self._total), 1))

    # -- without a layout of the screen -----------------------------------------------------
    def _set_virtual_size(self, size: Size) -> None:
        self._sizing = True
        try:
            self.virtual_size = size
        finally:
            self._sizing = False
            self._layout_answered = False

    def watch_virtual_size(self, size: Size) -> None:
        # `virtual_size` is a reactive with layout=True: after its watchers, Textual calls
        # refresh(layout=True). A table whose own size comes from its CSS (not `auto`) keeps
        # its place whatever it holds: only its scrollbars need to hear of the new size, unless
        # one of them appears or goes (then the layout happens).
        if not self._sizing or self.styles.auto_dimensions or not self.container_size or self.scrollbars_for(size) != (
            self.show_horizontal_scrollbar, self.show_vertical_scrollbar
        ):
            return
        width, height = self.container_size
        if self.show_vertical_scrollbar and self.styles.scrollbar_size_vertical:
            bar = self.vertical_scrollbar
            bar.window_virtual_size = size.height
            bar.window_size = height - self.scrollbar_size_horizontal
        if self.show_horizontal_scrollbar and self.styles.scrollbar_size_horizontal:
            bar = self.horizontal_scrollbar
            bar.window_virtual_size = size.width
            bar.window_size = width - self.scrollbar_size_vertical
        # Within the new size (scroll_x and scroll_y validate what they are given).
        self.scroll_x = self.scroll_x
        self.scroll_y = self.scroll_y
        self._layout_answered = True

    def scrollbars_for(self, size: Size) -> tuple[bool, bool]:
        """(horizontal, vertical): the scrollbars a virtual size of `size` shows, by the
        rule of Textual's scrolling widgets (overflow `auto` shows a bar when the contents
        do not fit, counting the room the other bar takes)."""
        styles = self.styles
        width, height = self.container_size
        overflow_x, overflow_y = styles.overflow_x, styles.overflow_y
        horizontal = overflow_x == "scroll" or (overflow_x == "auto" and size.width > width)
        vertical = overflow_y == "scroll" or (overflow_y == "auto" and size.height > height)
        if overflow_x == "auto" and vertical and not horizontal:
            horizontal = size.width > width - styles.scrollbar_size_vertical
        if overflow_y == "auto" and horizontal and not vertical:
            vertical = size.height > height - styles.scrollbar_size_horizontal
        return horizontal, vertical

    def refresh(self, *regions, repaint: bool = True, layout: bool = False, recompose: bool = False):
        if layout and self._layout_answered:
            self._layout_answered = False
            if self._sizing and not regions and not recompose:
                return self  # the new virtual size's own: fill repaints the lines that change
            layout = False
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    # -- drawing ----------------------------------------------------------------------------
    def _styles(self) -> dict:
        """The styles a paint uses, taken once for it."""
        component = self.get_component_rich_style
        return {
            "base": self.rich_style, "header": component("tensor-table--header"),
            "cursor": component("tensor-table--cursor"), "hover": component("tensor-table--hover"),
            "header-hover": component("tensor-table--header-hover"),
            "rows": {}, "cells": {},
        }

    def _row_styles(self, paint: dict, header: bool, cursor: bool, hover: bool) -> tuple[Style, Style, Style]:
        """(the row's style, the cursor's and hover's over it, the colour put after a cell's
        own style): a DataTable's `_get_row_style` and `_get_styles_to_render_cell`."""
        key = (header, cursor, hover)
        styles = paint["rows"].get(key)
        if styles is None:
            component = Style()
            if hover:
                component += paint["hover"]
                if header:
                    component += paint["header-hover"]
            if cursor:
                component += paint["cursor"]
            styles = paint["rows"][key] = (paint["header"] if header else paint["base"], component,
                                           Style.from_color(color=component.color))
        return styles

    def _meta(self, row: int, column: int) -> Style:
        meta = self._metas.get((row, column))
        if meta is None:
            info = {"row": row, "column": column} if column >= 0 else {"row": row, "column": 0, "out_of_bounds": True}
            meta = self._metas[(row, column)] = Style.from_meta(info)
        return meta

    def render_line(self, y: int) -> Strip:
        paint = self._paint or self._styles()
        width = self.size.width
        scroll_x, scroll_y = self.scroll_offset
        row = HEADER if y == 0 else y - 1 + scroll_y
        if row >= len(self._rows):
            return Strip.blank(width, paint["base"])
        header = row == HEADER
        cursor = not header and row == self._cursor_row
        hover = self._hover_shown and row == self._hover_row
        row_style, component, post = self._row_styles(paint, header, cursor, hover)
        segments: list[Segment] = []
        cells = self._labels if header else self._rows[row]
        cell = self._cell
        for column, (text, cell_width) in enumerate(zip(cells, self._widths)):
            segments += cell(paint, text, cell_width, row, column, row_style, component, post)
        # The space right of the last column, styled as the row (a DataTable's for a row cursor).
        segments.append(Segment(" " * max(0, width - self._total), row_style + component + self._meta(row, -1)))
        length = max(width, self._total)
        if scroll_x == 0 and length == width:
            return Strip(segments, width).simplify()
        return Strip(segments, length).crop(scroll_x, scroll_x + width).adjust_cell_length(width, paint["base"]).simplify()

    def _cell(self, paint: dict, text: Text, width: int, row: int, column: int, row_style: Style, component: Style,
              post: Style) -> list[Segment]:
        """One cell's segments: what a DataTable's cell gives (Rich's Styled(Padding(text)))."""
        key = (row, column, component, text.style)
        styles = paint["cells"].get(key)
        if styles is None:
            pre = row_style + self._meta(row, column) + component
            edge = pre + post
            own = (pre + self.app.console.get_style(text.style) + post) if text.style else edge
            styles = paint["cells"][key] = (pre, edge, own)
        pre, edge, own = styles
        plain = text.plain
        justify = text.justify
        if text.spans or justify not in _JUSTIFIED or text.overflow not in _CROPPED or "\n" in plain or "\t" in plain:
            return self._rich_cell(text, width, pre, post)
        if justify == "right":
            plain = plain.rstrip()  # as Rich justifies right
        room = width - 2 * PADDING
        spare = room - cell_len(plain)
        if spare < 0:  # longer than its column: cut where the cell ends, as Rich does
            plain, spare = set_cell_size(plain, room), 0
        return cell_segments(plain, justify, spare, PADDING, edge, own)

    def _rich_cell(self, text: Text, width: int, pre: Style, post: Style) -> list[Segment]:
        """A cell that is not a plain one-line text (spans, centred, several lines): drawn by
        Rich, as a DataTable draws every cell. The tensors pane makes none."""
        options = self.app.console_options.update_dimensions(width, 1).update(no_wrap=True)
        return self.app.console.render_lines(Styled(Padding(text, (0, PADDING)), pre_style=pre, post_style=post), options)[0]

    # -- the mouse ----------------------------------------------------------------------------
    def _row_under(self, event: events.MouseEvent) -> int | None:
        """The row under the mouse (HEADER for the header), None below the last row."""
        offset = event.get_content_offset(self)
        if offset is None:
            return None
        row = HEADER if offset.y == 0 else offset.y - 1 + self.scroll_offset.y
        return row if row < len(self._rows) else None

    def _show_hover(self, shown: bool, row: int | None = None) -> None:
        old = (self._hover_shown, self._hover_row)
        self._hover_shown = shown
        if row is not None:
            self._hover_row = row
        if (self._hover_shown, self._hover_row) != old:
            self._refresh_row(old[1])
            self._refresh_row(self._hover_row)

    def on_mouse_move(self, event: events.MouseMove) -> None:
        row = self._row_under(event)
        self._show_hover(row is not None, row)

    def on_leave(self, _: events.Leave) -> None:
        self._show_hover(False)

    def on_click(self, event: events.Click) -> None:
        self._show_hover(True)
        row = self._row_under(event)
        if row is None or row == HEADER:
            return
        self._set_cursor(row)
        self._scroll_cursor_into_view(animate=True)
        event.stop()

    # -- keys (a DataTable's, for a row cursor) ------------------------------------------------
    def action_select_cursor(self) -> None:
        self._show_hover(False)

    def action_cursor_up(self) -> None:
        self._show_hover(False)
        self._set_cursor(self._cursor_row - 1)

    def action_cursor_down(self) -> None:
        self._show_hover(False)
        self._set_cursor(self._cursor_row + 1)

    def action_cursor_right(self) -> None:
        self._show_hover(False)
        self.action_scroll_right()

    def action_cursor_left(self) -> None:
        self._show_hover(False)
        self.action_scroll_left()

    def action_page_down(self) -> None:
        self._show_hover(False)
        height = self.scrollable_content_region.height - 1
        row = self._cursor_row
        self.scroll_relative(y=height, animate=False, force=True)
        self.move_cursor(row=row + min(height + 1, len(self._rows) - row) - 1, scroll=False)

    def action_page_up(self) -> None:
        self._show_hover(False)
        height = self.scrollable_content_region.height - 1
        row = self._cursor_row
        self.scroll_relative(y=-height, animate=False)
        self.move_cursor(row=row - min(height + 1, row + 1) + 1, scroll=False)

    def action_scroll_top(self) -> None:
        self._show_hover(False)
        self._set_cursor(0)

    def action_scroll_bottom(self) -> None:
        self._show_hover(False)
        self._set_cursor(len(self._rows) - 1)

    def action_scroll_home(self) -> None:
        self._show_hover(False)
        self.scroll_x = 0

    def action_scroll_end(self) -> None:
        self._show_hover(False)
        self.scroll_x = self.max_scroll_x
