"""The DataTable of the tensors and values panes, made cheap to fill at every step.

Two costs of a stock DataTable, paid at each step because each step brings new contents:

- Its new virtual (scrollable) size asks for a layout of the whole screen, and every pane
  is then arranged and drawn again. A table whose own size comes from its CSS (not `auto`)
  keeps its place whatever it holds: only its scrollbars need to hear of the new size,
  unless one of them appears or goes.
- Each cell goes through Rich's general renderer (Styled(Padding(cell)) → render_lines),
  ~0.1 ms a cell: the values grid alone was ~10 ms a step. The cells these panes put in
  are one-line `Text`s that fit their column (the columns are sized to them); such a cell
  is drawn here straight into its segments, the same segments Rich makes
  (tests/ui/test_pane_table.py compares the two). Anything else goes the stock way.
"""

from __future__ import annotations

from rich.console import Console
from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.renderables.styled import Styled
from textual.widgets import DataTable

JUSTIFIED = ("right", "left", "default", None)


def quick_cell_lines(cell: object, width: int, padding: int, pre_style: Style, post_style: Style,
                     console: Console) -> list[list[Segment]] | None:
    """What `console.render_lines(Styled(Padding(cell, (0, padding)), pre_style, post_style),
    no_wrap, height 1, width)` gives, for a one-line Text without spans that fits; else None."""
    if type(cell) is not Text or cell._spans or cell.justify not in JUSTIFIED:
        return None
    plain = cell.plain
    inner = width - 2 * padding
    if width <= 0 or inner < 0 or len(plain) > inner or not plain.isprintable():  # no newline, tab or control character
        return None
    length = cell.cell_len
    if length > inner:
        return None
    edge = pre_style + post_style
    own = (pre_style + console.get_style(cell.style) + post_style) if cell.style else edge
    spare = inner - length
    line: list[Segment] = []
    if padding:
        line.append(Segment(" " * padding, edge))
    if cell.justify == "right":
        line.append(Segment(" " * spare + plain, own))
    elif cell.justify == "left":
        line.append(Segment(plain + " " * spare, own))
    else:  # "default": the text, then padding outside it
        line.append(Segment(plain, own))
        if spare:
            line.append(Segment(" " * spare, edge))
    if padding:
        line.append(Segment(" " * padding, edge))
    return [line]


class PaneTable(DataTable):
    _steady = False  # inside _update_dimensions: its layout request is answered here

    def _update_dimensions(self, new_rows) -> None:
        if self.styles.auto_dimensions:  # its size follows its contents: a layout is needed
            super()._update_dimensions(new_rows)
            return
        bars = (self.show_vertical_scrollbar, self.show_horizontal_scrollbar)
        self._steady = True
        try:
            super()._update_dimensions(new_rows)
        finally:
            self._steady = False
        self._scroll_update(self.virtual_size)
        if (self.show_vertical_scrollbar, self.show_horizontal_scrollbar) != bars:
            self.refresh(layout=True)

    def refresh(self, *regions, repaint: bool = True, layout: bool = False, recompose: bool = False):
        return super().refresh(*regions, repaint=repaint, layout=layout and not self._steady, recompose=recompose)

    def _render_cell(self, row_index: int, column_index: int, base_style: Style, width: int,
                     cursor: bool = False, hover: bool = False):
        # DataTable._render_cell (textual 8.x), with quick_cell_lines before Rich's renderer.
        is_header_cell = row_index == -1
        is_row_label_cell = column_index == -1
        is_fixed_style_cell = (
            not is_header_cell and not is_row_label_cell
            and (row_index < self.fixed_rows or column_index < self.fixed_columns)
        )
        row_key = self._header_row_key if is_header_cell else self._row_locations.get_key(row_index)
        column_key = self._column_locations.get_key(column_index)
        cell_cache_key = (row_key, column_key, base_style, cursor, hover, self._show_hover_cursor,
                          self._update_count, self._pseudo_class_state)
        lines = self._cell_render_cache.get(cell_cache_key)
        if lines is not None:
            return lines
        base_style += Style.from_meta({"row": row_index, "column": column_index})
        row_label, row_cells = self._get_row_renderables(row_index)
        cell = (row_label if row_label is not None else "") if is_row_label_cell else row_cells[column_index]
        component_style, post_style = self._get_styles_to_render_cell(
            is_header_cell, is_row_label_cell, is_fixed_style_cell, hover, cursor, self.show_cursor,
            self._show_hover_cursor, self.cursor_foreground_priority == "css", self.cursor_background_priority == "css",
        )
        if is_header_cell:
            row_height = self.header_height
            options = self.app.console_options.update_dimensions(width, row_height)
        else:
            row = self.rows[row_key]
            if row.auto_height and row.height == 0:
                row_height = 0
                options = self.app.console_options.update_width(width)
            else:
                row_height = row.height
                options = self.app.console_options.update_dimensions(width, row_height)
        if row_height == 1:
            options = options.update(no_wrap=True)
            lines = quick_cell_lines(cell, width, self.cell_padding, base_style + component_style, post_style, self.app.console)
        if lines is None:
            lines = self.app.console.render_lines(
                Styled(Padding(cell, (0, self.cell_padding)), pre_style=base_style + component_style, post_style=post_style),
                options,
            )
        self._cell_render_cache[cell_cache_key] = lines
        return lines
