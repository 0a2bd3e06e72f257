"""The DataTable of the tensors pane, filled at every step without a layout of the screen.

A stock DataTable that gets new contents sets a new virtual (scrollable) size, and that
asks for a layout of the whole screen: every pane is arranged and drawn again, at each
step. A table whose own size comes from its CSS (not `auto`) keeps its place whatever it
holds: only its scrollbars need to hear of the new size, unless one of them appears or
goes. PaneTable answers the new size itself in that case, and lets the layout happen in
every other.

It does so through Textual's public API only (a reactive's watcher, `refresh`, the
scrollbars' own reactives): an earlier PaneTable overrode four of DataTable's private
methods (copied from Textual 8.x) to draw one-line cells and rows faster, which a Textual
release could have broken without a word; tests/ui/test_pane_table_public.py keeps private
names out of this module. Drawing, and measuring the new cells on idle, are DataTable's
own again (when the copied paint came in, the tensors table took 1.9 ms to draw the stock
way and 1.4 ms the copied way: docs/benchmarks.md).

`cell_segments` is the values grid's (values_grid.py): the segments Rich makes of a short
one-line cell.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widgets import DataTable


def cell_segments(plain: str, justify: str | None, spare: int, padding: int, edge: Style, own: Style) -> list[Segment]:
    """The segments Rich makes of a one-line text that fits its cell with `spare` columns
    left: `own` the text's style, `edge` the cell's (padding and the space outside the text)."""
    line: list[Segment] = []
    if padding:
        line.append(Segment(" " * padding, edge))
    if justify == "right":
        line.append(Segment(" " * spare + plain, own))
    elif justify == "left":
        line.append(Segment(plain + " " * spare, own))
    else:  # "default": the text, then padding outside it
        line.append(Segment(plain, own))
        if spare:
            line.append(Segment(" " * spare, edge))
    if padding:
        line.append(Segment(" " * padding, edge))
    return line


class PaneTable(DataTable):
    """A DataTable whose new contents cost no layout of the screen unless a scrollbar
    appears or goes (or its size follows its contents: `auto` in its CSS)."""

    # A new virtual size was answered here (the scrollbars told): the layout that the
    # reactive asks for next is not needed.
    _layout_answered = False
    _rows_only = False  # set_cells under way: the refresh of the whole table is left to the rows'

    def set_cells(self, cells: list[tuple[str, str, object]]) -> None:
        """Put new values in cells (row key, column key, value), their widths kept, and draw
        again only the rows that hold them: `update_cell` repaints the whole table (its
        blank lines included), at every step."""
        rows = set()
        self._rows_only = True
        try:
            for row, column, value in cells:
                self.update_cell(row, column, value)
                rows.add(row)
        finally:
            self._rows_only = False
        for row in rows:
            self.refresh_row(self.get_row_index(row))

    def watch_virtual_size(self, size: Size) -> None:
        # `virtual_size` is a reactive with layout=True: after its watchers, Textual calls
        # refresh(layout=True). A ScrollView's virtual size is set only by the widget
        # itself (DataTable, when rows, columns, header or padding change), never by a layout.
        if self.styles.auto_dimensions or not self.container_size or self.scrollbars_for(size) != (
            self.show_horizontal_scrollbar, self.show_vertical_scrollbar
        ):
            return  # the table's own size, or a scrollbar's, changes: a layout is needed
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

    # A refill under way (clear, then new columns and rows) repaints this many lines from the
    # top, not the blank lines below them, until its paint (see refill).
    _refill_lines: int | None = None

    def refill(self, rows: int) -> None:
        """The table is about to be cleared and filled with `rows` rows: repaint only the
        header and the rows it held or will hold (the blank lines below stay as they were).
        Not when scrolled (every line then held a row), nor past a change of style or size."""
        if self.scroll_offset == (0, 0) and self.show_header and self.header_height == 1:
            self._refill_lines = 1 + max(self.row_count, rows)

    def refresh(self, *regions, repaint: bool = True, layout: bool = False, recompose: bool = False):
        if self._rows_only and not regions and not layout and not recompose:
            return self  # set_cells refreshes the rows it changed
        if layout and self._layout_answered:
            self._layout_answered = False
            layout = False
        if self._refill_lines is not None and repaint and not (regions or layout or recompose) and self.is_mounted:
            regions = (Region(0, 0, max(self.size.width, self.virtual_size.width), self._refill_lines),)
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    def render_lines(self, crop: Region) -> list[Strip]:
        self._refill_lines = None  # the refill is being painted
        return super().render_lines(crop)

    def notify_style_update(self) -> None:
        self._refill_lines = None  # focus, theme: every line
        super().notify_style_update()

    def on_resize(self) -> None:
        self._refill_lines = None
