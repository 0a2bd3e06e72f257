"""The DataTable of the tensors and values panes, made cheap to fill at every step.

Costs of a stock DataTable, paid at each step because each step brings new contents:

- Its new virtual (scrollable) size asks for a layout of the whole screen, and every pane
  is then arranged and drawn again. A table whose own size comes from its CSS (not `auto`)
  keeps its place whatever it holds: only its scrollbars need to hear of the new size,
  unless one of them appears or goes.
- Each cell goes through Rich's general renderer (Styled(Padding(cell)) → render_lines),
  ~0.1 ms a cell: the values grid alone was ~10 ms a step. The cells these panes put in
  are one-line `Text`s that fit their column (the columns are sized to them); such a cell
  is drawn here straight into its segments, the same segments Rich makes
  (tests/ui/test_pane_speed_parts.py compares the two). Anything else goes the stock way.
- Around the cells, each line asked the DOM for the table's style and each row for its
  component styles (a walk up every ancestor each time: ~0.1 ms), and each cell built
  console options it did not need. A row is put together here the way DataTable puts it
  together (`_render_line_in_row`, textual 8.x), with those styles taken once per paint
  (the values grid of benchmarks/ui_step.py: ~6.8 -> ~4 ms to draw, measured alone).
- On idle it measured every new cell, for widths that only `auto` columns, row labels and
  auto-height rows use: with none of them, only the virtual size is set.
"""

from __future__ import annotations

from rich.console import Console
from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.renderables.styled import Styled
from textual.color import Color
from textual.coordinate import Coordinate
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widgets import DataTable

COMPONENTS = ("datatable--header", "datatable--fixed", "datatable--odd-row", "datatable--even-row")

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
    return [cell_segments(plain, cell.justify, inner - length, padding, edge, own)]


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
    _steady = False  # inside _update_dimensions: its layout request is answered here
    # While a paint is under way: the table's own style and its component styles (they
    # cannot change in the middle of one).
    _paint_styles: tuple[Style, dict[str, Style]] | None = None
    _quick_paint = True  # False once the quick paint failed on this textual (see render_lines)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._meta_styles: dict[tuple[int, int], Style] = {}  # the cell each segment belongs to (clicks read it)

    def render_lines(self, crop: Region) -> list[Strip]:
        if PaneTable._quick_paint:
            self._paint_styles = (self.rich_style, {name: self.get_component_styles(name).rich_style for name in COMPONENTS})
        try:
            return super().render_lines(crop)
        except (AttributeError, TypeError, KeyError):
            if not PaneTable._quick_paint:
                raise
            # The paint below follows DataTable's private methods of textual 8.2: a textual
            # whose DataTable changed them gets the stock paint from now on, not a crash.
            PaneTable._quick_paint = False
            self._paint_styles = None
            self._row_render_cache.clear()
            return super().render_lines(crop)
        finally:
            self._paint_styles = None

    def render_line(self, y: int) -> Strip:
        if self._paint_styles is None or self.fixed_rows:
            return super().render_line(y)
        # DataTable.render_line, with the table's style of this paint.
        scroll_x, scroll_y = self.scroll_offset
        if y >= (self.header_height if self.show_header else 0):
            y += scroll_y
        return self._render_line(y, scroll_x, scroll_x + self.size.width, self._paint_styles[0])

    def _get_row_style(self, row_index: int, base_style: Style) -> Style:
        if self._paint_styles is None:
            return super()._get_row_style(row_index, base_style)
        components = self._paint_styles[1]
        if row_index == -1:
            return components["datatable--header"]
        if row_index < self.fixed_rows:
            return components["datatable--fixed"]
        if self.zebra_stripes:
            return components["datatable--odd-row" if row_index % 2 else "datatable--even-row"]
        return base_style

    def _render_line_in_row(self, row_key, line_no: int, base_style: Style, cursor_location: Coordinate,
                            hover_location: Coordinate):
        if self._paint_styles is None or (self._labelled_row_exists and self.show_row_labels):
            return super()._render_line_in_row(row_key, line_no, base_style, cursor_location, hover_location)
        # DataTable._render_line_in_row (textual 8.x) with the component styles of this paint.
        cursor_type = self.cursor_type
        show_cursor = self.show_cursor
        cache_key = (row_key, line_no, base_style, cursor_location, hover_location, cursor_type, show_cursor,
                     self._show_hover_cursor, self._update_count, self._pseudo_class_state)
        cached = self._row_render_cache.get(cache_key)
        if cached is not None:
            return cached
        should_highlight = self._should_highlight
        header_style = self._paint_styles[1]["datatable--header"]
        row_index = self._row_locations.get(row_key) if row_key in self._row_locations else -1
        columns = self.ordered_columns
        widths = [column.get_render_width(self) for column in columns]
        fixed_row = []
        if self.fixed_columns:
            if row_key is self._header_row_key:
                fixed_style = header_style
            else:
                fixed_style = self._paint_styles[1]["datatable--fixed"] + Style.from_meta({"fixed": True})
            fixed_row = self._row_cells(row_key, row_index, min(self.fixed_columns, len(columns)), fixed_style, widths,
                                        cursor_location, hover_location, line_no)
        row_style = self._get_row_style(row_index, base_style)
        scrollable_row = self._row_cells(row_key, row_index, len(columns), row_style, widths, cursor_location, hover_location, line_no)
        remaining_space = max(0, self.size.width - (sum(widths[self.fixed_columns:]) + self._row_label_column_width))
        if cursor_type == "row":
            extend_style, _ = self._get_styles_to_render_cell(
                row_index == -1, False, False,
                should_highlight(hover_location, Coordinate(row_index or 0, 0), cursor_type),
                row_index == cursor_location.row, self.show_cursor, self._show_hover_cursor, False, False,
            )
            extend_style = row_style + extend_style
        elif row_style.bgcolor is not None:
            faded = Color.from_rich_color(row_style.bgcolor).blend(self.background_colors[1], factor=0.25)
            extend_style = Style.from_color(color=row_style.color, bgcolor=faded.rich_color)
        else:
            extend_style = Style.from_color(row_style.color, row_style.bgcolor)
        extend_style += Style.from_meta({"row": row_index, "column": 0, "out_of_bounds": True})
        scrollable_row.append([Segment(" " * remaining_space, extend_style)])
        row_pair = (fixed_row, scrollable_row)
        self._row_render_cache[cache_key] = row_pair
        return row_pair

    def _row_cells(self, row_key, row_index: int, count: int, base_style: Style, widths: list[int],
                   cursor_location: Coordinate, hover_location: Coordinate, line_no: int) -> list[list[Segment]]:
        """Line `line_no` of the first `count` cells of a row: what `_render_cell` gives, the
        one-line cells made here with the styles that do not depend on the cell reused (the
        meta that says which cell it is is added last: it holds no colour)."""
        is_header = row_index == -1
        row_cells = self._get_row_renderables(row_index).cells
        if is_header:
            height = self.header_height
        else:
            row = self.rows[row_key]
            height = 0 if row.auto_height and row.height == 0 else row.height
        cursor_type = self.cursor_type
        should_highlight = self._should_highlight
        styles_for = self._get_styles_to_render_cell
        flags = (self.show_cursor, self._show_hover_cursor, self.cursor_foreground_priority == "css",
                 self.cursor_background_priority == "css")
        fixed_rows, fixed_columns, padding, console = self.fixed_rows, self.fixed_columns, self.cell_padding, self.app.console
        metas = self._meta_styles
        out = []
        for column_index in range(count):
            location = Coordinate(row_index, column_index)
            cursor = should_highlight(cursor_location, location, cursor_type)
            hover = should_highlight(hover_location, location, cursor_type)
            line = None
            if height == 1 and column_index < len(row_cells):
                fixed = not is_header and (row_index < fixed_rows or column_index < fixed_columns)
                component, post = styles_for(is_header, False, fixed, hover, cursor, *flags)
                lines = quick_cell_lines(row_cells[column_index], widths[column_index], padding, base_style + component, post, console)
                if lines is not None:
                    meta = metas.get((row_index, column_index))
                    if meta is None:
                        if len(metas) > 20_000:
                            metas.clear()
                        meta = metas[(row_index, column_index)] = Style.from_meta({"row": row_index, "column": column_index})
                    line = [Segment(segment.text, segment.style + meta) for segment in lines[0]]
            if line is None:
                line = self._render_cell(row_index, column_index, base_style, widths[column_index], cursor=cursor, hover=hover)[line_no]
            out.append(line)
        return out

    def _update_dimensions(self, new_rows) -> None:
        if self.styles.auto_dimensions:  # its size follows its contents: a layout is needed
            super()._update_dimensions(new_rows)
            return
        bars = (self.show_vertical_scrollbar, self.show_horizontal_scrollbar)
        self._steady = True
        try:
            if self._sized_up_front(new_rows):
                # DataTable measures every new cell for the widths of `auto` columns, labels
                # and auto-height rows: with none of them, only the size is left to set.
                self.virtual_size = Size(sum(column.get_render_width(self) for column in self.columns.values())
                                         + self._row_label_column_width,
                                         self._total_row_height + (self.header_height if self.show_header else 0))
            else:
                super()._update_dimensions(new_rows)
        finally:
            self._steady = False
        self._scroll_update(self.virtual_size)
        if (self.show_vertical_scrollbar, self.show_horizontal_scrollbar) != bars:
            self.refresh(layout=True)

    def _sized_up_front(self, new_rows) -> bool:
        """Every column has its width set and every new row is one plain line high."""
        if any(column.auto_width for column in self.columns.values()):
            return False
        rows = self.rows
        for key in new_rows:
            row = rows.get(key)
            if row is not None and (row.label is not None or row.auto_height):
                return False
        return True

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
        else:
            row = self.rows[row_key]
            row_height = 0 if row.auto_height and row.height == 0 else row.height
        if row_height == 1:
            lines = quick_cell_lines(cell, width, self.cell_padding, base_style + component_style, post_style, self.app.console)
        if lines is None:
            if row_height:
                options = self.app.console_options.update_dimensions(width, row_height)
            else:
                options = self.app.console_options.update_width(width)
            if row_height == 1:
                options = options.update(no_wrap=True)
            lines = self.app.console.render_lines(
                Styled(Padding(cell, (0, self.cell_padding)), pre_style=base_style + component_style, post_style=post_style),
                options,
            )
        self._cell_render_cache[cell_cache_key] = lines
        return lines
