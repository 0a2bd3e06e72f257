"""The values pane's grid, drawn a line at a time (Textual's Line API), not by a DataTable.

At each step the values pane gets new numbers and the whole grid is drawn again. A
DataTable draws a line through per-line and per-cell machinery made for any renderable in
any cell (caches keyed on a dozen things, component styles looked up per cell, meta styles
so that clicks can find their cell): ~14k Python calls and ~6.5 ms for a small grid, a fifth
of a step's screen update. This grid holds only what the values pane shows, one-line texts
in columns sized to fit them, with a fixed first column (the row index) and a header row
(the column index), and puts each visible line straight into a Strip from those texts with
the styles of this paint. Clicks and hover find their cell from the mouse's offset.

It looks like the DataTable it replaces (same characters in the same cells, same colours
for header, fixed column, cursor, hover, focused or not: tests/ui/test_values_grid.py
draws both), and keeps its keys: arrows, page up/down, home/end (first/last column),
ctrl+home/end (first/last row), the cursor kept in view past the fixed column.
"""

from __future__ import annotations

from bisect import bisect_right

from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.color import Color
from textual.coordinate import Coordinate
from textual.geometry import Region, Size, Spacing
from textual.renderables.styled import Styled
from textual.scroll_view import ScrollView
from textual.strip import Strip

from .line_cells import KeptPaintStyles, cell_segments

HEADER = -1  # the row index of the header, as DataTable numbers it
_BLANK = Text("")
_JUSTIFIED = ("right", "left", "default", None)  # the ways a DataTable's cell is laid out that are done here


def _drawn_alike(a: list[Text], b: list[Text]) -> bool:
    """Cells that draw the same (Text's own == leaves out its style and justification)."""
    return len(a) == len(b) and all(
        x.plain == y.plain and x.style == y.style and x.justify == y.justify and x.spans == y.spans for x, y in zip(a, b))


class ValuesGrid(KeptPaintStyles, ScrollView, can_focus=True):
    ALLOW_SELECT = False

    BINDINGS = [
        Binding("enter", "select_cursor", "Select", show=False),  # the grid's, as it was the DataTable's
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
        "values-grid--header", "values-grid--header-hover", "values-grid--fixed", "values-grid--fixed-cursor",
        "values-grid--cursor", "values-grid--hover",
    }

    # DataTable's look (textual 8.x DEFAULT_CSS), for the parts this grid has.
    DEFAULT_CSS = """
    ValuesGrid {
        background: $surface;
        color: $foreground;
        height: auto;
        max-height: 100%;
        &:focus {
            background-tint: $foreground 5%;
            & > .values-grid--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .values-grid--header { background-tint: $foreground 5%; }
            & > .values-grid--fixed-cursor {
                color: $block-cursor-foreground;
                background: $block-cursor-background;
            }
        }
        & > .values-grid--header { text-style: bold; background: $panel; color: $foreground; }
        &:ansi > .values-grid--header { background: ansi_bright_blue; color: ansi_default; }
        & > .values-grid--fixed { background: $secondary-muted; color: $foreground; }
        & > .values-grid--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        & > .values-grid--fixed-cursor { background: $block-cursor-blurred-background; color: $foreground; }
        & > .values-grid--header-hover { background: $accent 30%; }
        & > .values-grid--hover { background: $block-hover-background; }
    }
    """

    _steady = False  # while the virtual size is set: the layout it asks for is not needed

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._rows: list[list[Text]] = []  # each row's cells, the row index first
        self._labels: list[Text] = [Text("")]  # the header, "" over the row index
        self._widths: list[int] = [2]  # each column's width, padding included
        self._starts: list[int] = []  # where each scrollable column starts, from the first scrollable one
        self._cursor = Coordinate(0, 0)
        self._hover = Coordinate(0, 0)
        self._hover_shown = False  # the mouse moved over the grid since the last key
        self._scroll_pending = False  # the cursor is to be scrolled into view once the grid has a size
        self._total = 0  # the width of the scrollable columns

    # -- contents --------------------------------------------------------------------------
    def fill(self, cells: list[list[Text]], row_labels: list[str] | None = None,
             column_labels: list[str] | None = None) -> None:
        """Show `cells` (rows of one-line texts), row and column indices around them, the
        cursor on the first value. `row_labels`: what each row is called, when not its
        position (a sparse tensor's stored rows are named by their index; a vector wrapped
        into rows, by the index each row starts at); `column_labels` likewise (`+3`)."""
        width = max((len(row) for row in cells), default=0)
        names = [str(r) for r in range(len(cells))] if row_labels is None else [str(label) for label in row_labels[: len(cells)]]
        names += [str(r) for r in range(len(names), len(cells))]
        old_rows, old_labels, old_widths = self._rows, self._labels, self._widths
        old_view = (round(self.scroll_x), round(self.scroll_y), self._cursor, self._hover_shown)
        self._rows = [[Text(name, style="bold"), *row] for name, row in zip(names, cells)]
        headers = [str(c) for c in range(width)] if column_labels is None else [str(label) for label in column_labels[:width]]
        headers += [str(c) for c in range(len(headers), width)]
        self._labels = [Text(""), *(Text(h) for h in headers)]
        widths = [len(str(len(cells) - 1)) if row_labels is None else max(map(len, names), default=1)]
        for c in range(width):
            widths.append(max([len(headers[c]), *(row[c].cell_len for row in cells if c < len(row))]))
        self._widths = [w + 2 for w in widths]  # a space each side, as a DataTable pads
        self._starts, x = [], 0
        for w in self._widths[1:]:
            self._starts.append(x)
            x += w
        self._total = x
        self._hover = Coordinate(0, 0)  # the cursor goes to the first value below (its old row redrawn if it moves)
        self._set_virtual_size(Size(sum(self._widths), len(self._rows) + 1))
        self.scroll_x = self.scroll_y = 0
        self.scroll_target_x = self.scroll_target_y = 0
        if old_view[:2] != (0, 0) or old_view[3]:
            self.refresh()  # scrolled or hovered: all of it
        elif self._widths == old_widths and _drawn_alike(self._labels, old_labels):
            # The same columns with other numbers (the next firing's tensor of the same shape):
            # only the rows whose cells changed are drawn again, not the blank lines below.
            for row in range(max(len(self._rows), len(old_rows))):
                if row >= len(self._rows) or row >= len(old_rows) or not _drawn_alike(self._rows[row], old_rows[row]):
                    self._refresh_row(row)
        else:  # other columns: the header and the rows drawn before or now, not the blank lines below
            self.refresh(Region(0, 0, max(self.size.width, self.virtual_size.width), 1 + max(len(self._rows), len(old_rows))))
        self.move_cursor(row=0, column=1)

    def clear(self) -> None:
        self.fill([])

    @property
    def row_count(self) -> int:
        return len(self._rows)

    @property
    def column_count(self) -> int:
        """Columns, the row index's included (as a DataTable's `columns` counts them)."""
        return len(self._labels)

    def get_cell_at(self, coordinate: tuple[int, int]) -> Text:
        row, column = coordinate
        return self._rows[row][column]

    @property
    def cursor_coordinate(self) -> Coordinate:
        return self._cursor

    @property
    def hover_coordinate(self) -> Coordinate:
        return self._hover

    def move_cursor(self, *, row: int | None = None, column: int | None = None, animate: bool = False,
                    scroll: bool = True) -> None:
        """Put the cursor on (`row`, `column`) (clamped to the grid). As a DataTable's, a cursor
        that moves is scrolled into view whatever `scroll` says; `scroll` also does it when it stays."""
        self._set_cursor(Coordinate(self._cursor.row if row is None else row,
                                    self._cursor.column if column is None else column))
        if scroll:
            self._scroll_cursor_into_view(animate=animate)

    def _set_cursor(self, coordinate: Coordinate) -> None:
        row = max(0, min(coordinate.row, len(self._rows) - 1))
        column = max(0, min(coordinate.column, len(self._widths) - 1))
        old, self._cursor = self._cursor, Coordinate(row, column)
        if old != self._cursor:
            self._refresh_row(old.row)
            self._refresh_row(row)
            self._scroll_cursor_into_view()

    def _scroll_cursor_into_view(self, animate: bool = False) -> None:
        if not self._rows:
            return
        if not self.size:  # hidden or not laid out yet: scroll when it gets a size
            self._scroll_pending = True
            return
        self._scroll_pending = False
        row, column = self._cursor
        widths = self._widths
        region = Region(sum(widths[:column]), 1 + row, widths[column], 1)
        self.scroll_to_region(region, animate=animate, spacing=Spacing(1, 0, 0, widths[0]), force=True)

    def on_resize(self, _: events.Resize) -> None:
        if self._scroll_pending:
            self._scroll_cursor_into_view()

    def _refresh_row(self, row: int) -> None:
        """Redraw the line of `row` (HEADER for the header), where it is on screen."""
        y = 0 if row == HEADER else row + 1 - round(self.scroll_y)
        if 0 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    # -- without a layout of the screen -----------------------------------------------------
    def _set_virtual_size(self, size: Size) -> None:
        """Set the virtual size; a grid whose own size comes from its CSS keeps its place,
        so only its scrollbars need to hear of it (unless one of them appears or goes)."""
        scroll_update = getattr(self, "_scroll_update", None)  # Textual's: without it, lay out
        if self.styles.auto_dimensions or scroll_update is None:
            self.virtual_size = size
            return
        bars = (self.show_vertical_scrollbar, self.show_horizontal_scrollbar)
        self._steady = True
        try:
            self.virtual_size = size
        finally:
            self._steady = False
        scroll_update(size)
        if (self.show_vertical_scrollbar, self.show_horizontal_scrollbar) != bars:
            self.refresh(layout=True)

    def refresh(self, *regions, repaint: bool = True, layout: bool = False, recompose: bool = False):
        if self._steady and not regions and not recompose:
            return self  # the new virtual size's own repaint: fill repaints the lines that change
        return super().refresh(*regions, repaint=repaint, layout=layout and not self._steady, recompose=recompose)

    # -- drawing ----------------------------------------------------------------------------
    def _styles(self) -> dict:
        """The styles a paint uses, taken once for it."""
        component = self.get_component_rich_style
        base = self.rich_style
        header = component("values-grid--header")
        extend = {}
        for kind, row_style in (("header", header), ("body", base)):
            if row_style.bgcolor is not None:  # the space right of the last column: faded, as a DataTable's
                faded = Color.from_rich_color(row_style.bgcolor).blend(self.background_colors[1], factor=0.25)
                extend[kind] = Style.from_color(color=row_style.color, bgcolor=faded.rich_color)
            else:
                extend[kind] = Style.from_color(row_style.color, row_style.bgcolor)
        return {
            "base": base, "header": header, "fixed": component("values-grid--fixed"), "extend": extend,
            "cursor": component("values-grid--cursor"), "fixed-cursor": component("values-grid--fixed-cursor"),
            "hover": component("values-grid--hover"), "header-hover": component("values-grid--header-hover"),
            "cells": {}, "texts": {},
        }

    def _cell_styles(self, paint: dict, kind: str, cursor: bool, hover: bool) -> tuple[Style, Style]:
        """(style before the cell's own, style after it) for a cell of `kind` (header, fixed,
        body): DataTable's `_get_styles_to_render_cell` with the cursor's colour put last."""
        key = (kind, cursor, hover)
        styles = paint["cells"].get(key)
        if styles is None:
            component = Style()
            if hover:
                component += paint["hover"]
                if kind == "header":
                    component += paint["header-hover"]
            if cursor:
                component += paint["cursor"]
                if kind == "fixed":
                    component += paint["fixed-cursor"]
            row_style = paint["header" if kind == "header" else kind if kind == "fixed" else "base"]
            styles = paint["cells"][key] = (row_style + component, Style.from_color(color=component.color))
        return styles

    def render_line(self, y: int) -> Strip:
        paint = self._paint or self._styles()
        width = self.size.width
        row = HEADER if y == 0 else y - 1 + round(self.scroll_y)
        if row >= len(self._rows):
            return Strip.blank(width, paint["base"])
        cells = self._labels if row == HEADER else self._rows[row]
        kind = "header" if row == HEADER else "body"
        cursor_column = self._cursor.column if row == self._cursor.row else None
        hover_column = self._hover.column if self._hover_shown and row == self._hover.row else None
        widths = self._widths
        fixed_width = widths[0]
        segments = self._cell(paint, cells[0], fixed_width, "header" if row == HEADER else "fixed",
                              cursor_column == 0, hover_column == 0)
        room = width - fixed_width
        if room > 0:
            scroll_x = round(self.scroll_x)
            starts = self._starts
            total = self._total
            first = max(0, bisect_right(starts, scroll_x) - 1)
            origin = starts[first] if first < len(starts) else total
            end = scroll_x + room
            scrolled: list[Segment] = []
            x = origin
            cell = self._cell
            for column in range(first + 1, len(widths)):
                if x >= end:
                    break
                scrolled += cell(paint, cells[column] if column < len(cells) else _BLANK, widths[column], kind,
                                 cursor_column == column, hover_column == column)
                x += widths[column]
            if end > x:  # the space right of the last column
                spare = max(0, width - total)
                scrolled.append(Segment(" " * spare, paint["extend"][kind]))
                x += spare
            if scroll_x == origin and x == end:
                segments += scrolled
            else:  # only the part in view: [scroll_x, end) of the columns drawn from `origin` to `x`
                segments += list(Segment.divide(scrolled, [scroll_x - origin, end - origin, x - origin]))[1]
            # The fixed cell is `fixed_width` wide and the rest `room`: no Strip measures it again.
            return Strip(list(Segment.simplify(segments)), width)
        return Strip(segments).crop(0, width).adjust_cell_length(width, paint["base"]).simplify()

    def _cell(self, paint: dict, text: Text, width: int, kind: str, cursor: bool, hover: bool) -> list[Segment]:
        """One cell's segments: what a DataTable's cell gives (Rich's Styled(Padding(text)))."""
        key = (kind, cursor, hover, text.style)
        styles = paint["texts"].get(key)
        if styles is None:
            pre, post = self._cell_styles(paint, kind, cursor, hover)
            edge = pre + post
            own = (pre + self.app.console.get_style(text.style) + post) if text.style else edge
            styles = paint["texts"][key] = (edge, own)
        edge, own = styles
        plain = text.plain
        spare = width - 2 - len(plain)
        if text._spans or spare < 0 or text.justify not in _JUSTIFIED or not plain.isascii() or not plain.isprintable():
            return self._rich_cell(paint, text, width, kind, cursor, hover)
        return cell_segments(plain, text.justify, spare, 1, edge, own)

    def _rich_cell(self, paint: dict, text: Text, width: int, kind: str, cursor: bool, hover: bool) -> list[Segment]:
        """A cell that is not a short plain text: drawn by Rich, as a DataTable does."""
        pre, post = self._cell_styles(paint, kind, cursor, hover)
        options = self.app.console_options.update_dimensions(width, 1).update(no_wrap=True)
        return self.app.console.render_lines(Styled(Padding(text, (0, 1)), pre_style=pre, post_style=post), options)[0]

    # -- the mouse ----------------------------------------------------------------------------
    def _cell_under(self, event: events.MouseEvent) -> Coordinate | None:
        """The cell under the mouse (row HEADER for the header), None off the grid."""
        offset = event.get_content_offset(self)
        if offset is None or not self._rows:
            return None
        x, y = offset
        row = HEADER if y == 0 else y - 1 + round(self.scroll_y)
        if row >= len(self._rows) or not 0 <= x < self.size.width:
            return None
        if x < self._widths[0]:
            return Coordinate(row, 0)
        x += round(self.scroll_x) - self._widths[0]
        column = bisect_right(self._starts, x)
        return Coordinate(row, column) if x < self._total else None

    def _show_hover(self, shown: bool, at: Coordinate | None = None) -> None:
        old = (self._hover_shown, self._hover)
        self._hover_shown = shown
        if at is not None:
            self._hover = at
        if (self._hover_shown, self._hover) != old:
            self._refresh_row(old[1].row)
            self._refresh_row(self._hover.row)

    def on_mouse_move(self, event: events.MouseMove) -> None:
        under = self._cell_under(event)
        self._show_hover(under is not None, under)

    def on_leave(self, _: events.Leave) -> None:
        self._show_hover(False)

    def on_click(self, event: events.Click) -> None:
        under = self._cell_under(event)
        self._show_hover(True)
        if under is None or under.row == HEADER:
            return
        self._set_cursor(under)
        self._scroll_cursor_into_view(animate=True)
        event.stop()

    # -- keys (DataTable's, for a cell cursor) -----------------------------------------------
    def action_select_cursor(self) -> None:
        self._show_hover(False)

    def action_cursor_up(self) -> None:
        self._show_hover(False)
        self._set_cursor(self._cursor.up())

    def action_cursor_down(self) -> None:
        self._show_hover(False)
        self._set_cursor(self._cursor.down())

    def action_cursor_right(self) -> None:
        self._show_hover(False)
        self._set_cursor(self._cursor.right())
        self._scroll_cursor_into_view(animate=True)

    def action_cursor_left(self) -> None:
        self._show_hover(False)
        self._set_cursor(self._cursor.left())
        self._scroll_cursor_into_view(animate=True)

    def action_page_down(self) -> None:
        self._show_hover(False)
        height = self.scrollable_content_region.height - 1
        row = self._cursor.row
        self.scroll_relative(y=height, animate=False, force=True)
        self.move_cursor(row=row + min(height + 1, len(self._rows) - row) - 1, scroll=False)

    def action_page_up(self) -> None:
        self._show_hover(False)
        height = self.scrollable_content_region.height - 1
        row = self._cursor.row
        self.scroll_relative(y=-height, animate=False)
        self.move_cursor(row=row - min(height + 1, row + 1) + 1, scroll=False)

    def action_scroll_top(self) -> None:
        self._show_hover(False)
        self._set_cursor(Coordinate(0, self._cursor.column))

    def action_scroll_bottom(self) -> None:
        self._show_hover(False)
        self._set_cursor(Coordinate(len(self._rows) - 1, self._cursor.column))

    def action_scroll_home(self) -> None:
        self._show_hover(False)
        self.move_cursor(column=0)

    def action_scroll_end(self) -> None:
        self._show_hover(False)
        self.move_cursor(column=len(self._widths) - 1)
