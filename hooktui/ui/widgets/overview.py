"""The gradient-flow overview: one row per module call, bars on a log scale.

Each row shows the call's output (abs-max and std), the L2 norm of the gradient arriving
at its output, of the gradient it passes to its inputs (when wide enough) and of its
parameters' gradients, each as a number and a bar. NaN / Inf are flagged by text
(`NaN!`, `Inf!`) as well as colour, so they survive NO_COLOR.

Why Unicode block bars and not a plotting widget (textual-plotext): a plot redraws a
whole canvas and wants every value up front, where a row here is one line of text drawn
with the Line API like the timeline: only the rows on screen are rendered (a run of
5,000 module calls costs what 20 do), their records' lazy statistics are computed only
then, and each row keeps its numbers next to its bars, which a plot's axes cannot.
Eighth blocks give 8 steps per cell, finer than a character plot's braille dots need here.

The scale is fixed: 1e-8 to 1e4 (LOG_LOW, LOG_HIGH) for every column. A scale fitted to
the data would need the statistics of every firing (the very cost avoided above), and
would change under the reader while a run streams in or a view scrolls; a fixed one reads
the same across columns, rows, scrolling, a growing run and two runs side by side.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ...engine.analysis.flow import CallNumbers, CallRow, CallRows, Quantity, call_numbers
from ...engine.records.records import Event
from .timeline import module_label

LOG_LOW, LOG_HIGH = -8, 4
EIGHTHS = " ▏▎▍▌▋▊▉"
FULL, LIGHT = "█", "░"
NONFINITE = "▚"  # a column whose every value is NaN/Inf: a hatch the width of the bar


def bar_level(value: float | None, width: int) -> int:
    """How many eighths of `width` cells `value` fills on the log scale. A value above 0
    fills at least one eighth (a tiny gradient is not nothing)."""
    if value is None or not value > 0 or math.isnan(value):
        return 0
    if math.isinf(value):
        return width * 8
    fraction = (math.log10(value) - LOG_LOW) / (LOG_HIGH - LOG_LOW)
    return max(1, min(width * 8, round(fraction * width * 8)))


def bar(solid: float | None, width: int, light: float | None = None) -> str:
    """`width` cells: blocks up to `solid`, then shade up to `light` (the output's std,
    then its abs-max)."""
    level = bar_level(solid, width)
    text = FULL * (level // 8) + (EIGHTHS[level % 8] if level % 8 else "")
    light_cells = -(-bar_level(light, width) // 8) if light is not None else 0
    if light_cells > len(text):
        text += LIGHT * (light_cells - len(text))
    return text.ljust(width)


def short_number(value: float | None) -> str:
    """At most 7 characters: 0, 3.1e-5, 1.2e+3 style with a one-digit mantissa (no decimal
    where the exponent needs the room: -1e308). NaN and +/-Inf (a trace file may hold them
    anywhere) are nan, inf, -inf."""
    if value is None:
        return "None"
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == 0:
        return "0"
    for digits in (1, 0):
        mantissa, _, exponent = f"{value:.{digits}e}".partition("e")
        text = f"{mantissa}e{int(exponent)}"
        if len(text) <= NUMBER:
            return text
    return text


# Column groups: (key, title); each is a number and a bar. `grad_input` goes first when narrow.
GROUPS = (("output", "output  █σ ░max"), ("grad_output", "∇ output ‖·‖"), ("grad_input", "∇ input ‖·‖"), ("params", "∇ params ‖·‖"))
NUMBER = 7
BAR_MIN, BAR_MAX = 6, 24
MODULE_MIN, MODULE_MAX = 10, 28
MARK, FLAG, CALL = 1, 4, 4
GROUP_EXTRA = 2 + NUMBER + 1  # two spaces before, the number, a space before the bar


class OverviewRows(ScrollView, can_focus=True):
    """Module calls as rows; the selected row (arrows) and the current firing's row (▶)."""

    COMPONENT_CLASSES = {
        "overview--header",
        "overview--selected",
        "overview--current",
        "overview--output",
        "overview--grad",
        "overview--params",
        "overview--error",
        "overview--dim",
    }

    DEFAULT_CSS = """
    OverviewRows { background: $surface; overflow-x: hidden; scrollbar-size: 1 1; }
    OverviewRows > .overview--header { text-style: bold; color: $text-primary; }
    OverviewRows > .overview--current { text-style: bold; background: $surface-lighten-2; }
    OverviewRows > .overview--selected { background: $surface-lighten-1; }
    OverviewRows:focus > .overview--selected { background: $block-cursor-background; color: $block-cursor-foreground; text-style: bold reverse; }
    OverviewRows > .overview--output { color: $text-accent; }
    OverviewRows > .overview--grad { color: $text-warning; }
    OverviewRows > .overview--params { color: $text-success; }
    OverviewRows > .overview--error { color: $text-error; text-style: bold; }
    OverviewRows > .overview--dim { color: $text-muted; }
    """

    BINDINGS = [
        Binding("up", "move(-1)", "Up", show=False),
        Binding("down", "move(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "edge(0)", "First", show=False),
        Binding("end", "edge(1)", "Last", show=False),
    ]

    class Chosen(Message):
        """Enter or a click on a row: show that call's firing."""

        def __init__(self, row: CallRow) -> None:
            super().__init__()
            self.row = row

    def __init__(self, events: Sequence[Event], marks: Mapping[int, str] | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.events = events  # the shared list of firings (the app's history)
        # Marks by firing position (`view --against`: "≠" where the runs differ); a row
        # without NaN/Inf shows the first of its firings' marks.
        self.marks = marks or {}
        self.calls = CallRows()
        self.module_width = MODULE_MIN
        self.selected = 0
        self.current: int | None = None  # the current firing's row
        # The selection follows the current firing until the user moves it.
        self.follow = True
        self.numbers_read = 0  # rows whose numbers were read from records (tests count it)
        self._numbers: LRUCache[int, tuple[int, CallNumbers]] = LRUCache(1024)
        self._strips: LRUCache[tuple, Strip] = LRUCache(512)
        self._layout_key: tuple | None = None
        self._groups: list[tuple[str, str]] = []
        self._bar = BAR_MIN
        self._module = MODULE_MIN
        self._line_width = 0
        self._base_style: Style | None = None
        self._measured = 0  # rows whose names were measured for the module column
        self.grow()

    # -- data ---------------------------------------------------------------------------
    def grow(self) -> None:
        """Take in new firings (cheap: no statistics are read here)."""
        self.calls.extend(self.events)
        longest = max((len(module_label(r.module)) for r in self.calls.rows[self._measured :]), default=0)
        self._measured = len(self.calls)
        self.module_width = max(self.module_width, min(MODULE_MAX, longest))
        self.virtual_size = Size(self.scrollable_content_region.width, len(self.calls) + 1)
        self.refresh()

    def show_current(self, event: Event | None) -> None:
        """Mark the row of the firing on screen; the selection follows it unless moved."""
        row = self.calls.row_of(event)
        changed = row != self.current
        self.current = row
        if self.follow and row is not None:
            changed = changed or row != self.selected
            self.selected = row
            self.scroll_row_into_view(row)
        if changed:
            self.refresh()

    def numbers(self, row_no: int) -> CallNumbers:
        row = self.calls.rows[row_no]
        cached = self._numbers.get(row_no)
        if cached is not None and cached[0] == row.version:
            return cached[1]
        self.numbers_read += 1
        numbers = call_numbers(row, self.events)
        self._numbers[row_no] = (row.version, numbers)
        return numbers

    @property
    def selected_row(self) -> CallRow | None:
        rows = self.calls.rows
        return rows[self.selected] if 0 <= self.selected < len(rows) else None

    # -- moving -------------------------------------------------------------------------
    def scroll_row_into_view(self, row: int) -> None:
        visible = max(1, self.scrollable_content_region.height - 1)
        if visible <= 1 and not self.size.height:  # not laid out yet
            self.call_after_refresh(self.scroll_row_into_view, row)
            return
        top = round(self.scroll_y)
        if row < top:
            self.scroll_to(y=row, animate=False, immediate=True, force=True)
        elif row >= top + visible:
            self.scroll_to(y=row - visible + 1, animate=False, immediate=True, force=True)

    def select(self, row: int) -> None:
        if not self.calls.rows:
            return
        self.selected = max(0, min(row, len(self.calls) - 1))
        self.follow = self.selected == self.current
        self.scroll_row_into_view(self.selected)
        self.refresh()

    def action_move(self, delta: int) -> None:
        self.select(self.selected + delta)

    def action_page(self, direction: int) -> None:
        self.select(self.selected + direction * max(1, self.scrollable_content_region.height - 2))

    def action_edge(self, last: int) -> None:
        self.select(len(self.calls) - 1 if last else 0)

    def on_click(self, event: events.Click) -> None:
        if event.y >= 1:
            row = round(self.scroll_y) + event.y - 1
            if row < len(self.calls):
                self.select(row)
                if event.chain >= 2 and self.selected_row is not None:
                    self.post_message(self.Chosen(self.selected_row))

    # -- layout -------------------------------------------------------------------------
    def _layout(self, width: int) -> None:
        key = (width, self.module_width)
        if key == self._layout_key:
            return
        self._layout_key = key
        self._strips.clear()
        fixed = MARK + FLAG + 1 + CALL + 1  # mark, flag, space, module, space, call

        def bar_width(module: int, count: int) -> int:
            return (width - fixed - module - count * GROUP_EXTRA) // count

        # Narrow: first shorten the module names, then leave out grad_input.
        for groups in (list(GROUPS), [g for g in GROUPS if g[0] != "grad_input"]):
            module = max(MODULE_MIN, self.module_width)
            short = BAR_MIN - bar_width(module, len(groups))
            if short > 0:
                module = max(MODULE_MIN, module - short * len(groups))
            if bar_width(module, len(groups)) >= BAR_MIN:
                break
        bars = max(1, min(BAR_MAX, bar_width(module, len(groups))))
        # Spare width goes to the module names (up to the longest), then stays blank.
        spare = width - fixed - module - len(groups) * (GROUP_EXTRA + bars)
        module += max(0, min(spare, self.module_width - module))
        self._groups, self._bar, self._module = groups, bars, module
        self._line_width = fixed + module + len(groups) * (GROUP_EXTRA + bars)

    def on_resize(self) -> None:
        self.virtual_size = Size(self.scrollable_content_region.width, len(self.calls) + 1)
        self._strips.clear()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips.clear()

    # -- rendering ----------------------------------------------------------------------
    def render_lines(self, crop):
        self._base_style = self.rich_style  # walks the ancestors: once per repaint
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self._base_style or self.rich_style
        self._layout(width)
        if y == 0:
            return self._header(base).crop_extend(0, width, base)
        row_no = round(self.scroll_y) + y - 1
        if row_no >= len(self.calls):
            return Strip.blank(width, base)
        row = self.calls.rows[row_no]
        selected = row_no == self.selected
        current = row_no == self.current
        key = (row_no, row.version, selected, current, self.has_focus)
        strip = self._strips.get(key)
        if strip is None:
            strip = self._strips[key] = self._row(row_no, row, selected, current, base)
        return strip.crop_extend(0, width, base)

    def _mark(self, row: CallRow) -> str:
        if not self.marks:
            return ""
        positions = (row.forward_pre, row.forward, row.backward_pre, row.backward, *row.param_grads)
        return next((self.marks[p] for p in positions if p in self.marks), "")

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"overview--{name}", partial=True)

    def _strip(self, pieces: list[tuple[str, Style | None]], style: Style) -> Strip:
        """A line from (text, style) pieces over the row's style. Segments are built
        directly (no Rich Text): record text reaching here is already made visible, and a
        cold repaint of a screenful of rows stays a few milliseconds."""
        segments = [Segment(text, style + extra if extra else style) for text, extra in pieces]
        return Strip(segments).extend_cell_length(self._line_width, style)

    def _header(self, base: Style) -> Strip:
        head = " " * MARK + "!".ljust(FLAG) + " " + "module".ljust(self._module) + " " + "call".rjust(CALL)
        pieces: list[tuple[str, Style | None]] = [(head, None)]
        for _, title in self._groups:
            pieces.append(("  " + title[: NUMBER + 1 + self._bar].ljust(NUMBER + 1 + self._bar), None))
        return self._strip(pieces, base + self.get_component_rich_style("overview--header"))

    def _row(self, row_no: int, row: CallRow, selected: bool, current: bool, base: Style) -> Strip:
        numbers = self.numbers(row_no)
        style = base
        if current:
            style += self.get_component_rich_style("overview--current")
        if selected:
            style += self.get_component_rich_style("overview--selected")
        plain = selected and self.has_focus  # one uniform highlight on the focused selection
        error, dim = (None, None) if plain else (self._style("error"), self._style("dim"))
        flag = f"{numbers.flag}!" if numbers.flag else self._mark(row)
        name = module_label(row.module)
        if len(name) > self._module:
            name = "…" + name[len(name) - self._module + 1 :]
        pieces: list[tuple[str, Style | None]] = [
            ("▶" if current else " ", None),
            (flag.ljust(FLAG), error),
            (" " + name.ljust(self._module) + " ", None),
            (str(row.call).rjust(CALL), dim),
        ]
        for key, _ in self._groups:
            pieces.append(("  ", None))
            self._group(pieces, key, row, numbers, None if plain else self._style("grad" if key.startswith("grad") else key), error, dim)
        return self._strip(pieces, style)

    def _group(self, pieces: list, key: str, row: CallRow, numbers: CallNumbers, style, error, dim) -> None:
        light: float | None = None
        if key == "output":
            quantity: Quantity = numbers.output_std
            reached, light = row.forward is not None, numbers.output_absmax.value
            shown = numbers.output_absmax
        else:
            quantity = shown = getattr(numbers, key)
            reached = {"grad_output": row.backward_pre, "grad_input": row.backward}.get(key, None) is not None or (key == "params" and bool(row.param_grads))
        if not reached:
            pieces.append((" " * (NUMBER + 1 + self._bar), None))
            return
        flag = shown.flag
        if flag:
            pieces.append((f"{flag}!".rjust(NUMBER), error))
        else:
            pieces.append((short_number(shown.value).rjust(NUMBER), dim if shown.value is None else None))
        pieces.append((" ", None))
        if flag and bar_level(quantity.value, self._bar) == 0 and bar_level(light, self._bar) == 0:
            # Every value non-finite (a NaN weight gradient): no finite size to draw, but a row
            # that is all NaN must not look emptier than one with a few (their bars show).
            pieces.append((NONFINITE * self._bar, error))
            return
        pieces.append((bar(quantity.value, self._bar, light), style))
