"""The timeline: one row per firing, rendered with the Line API.

Only the rows on screen are ever rendered, from the shared list of events, so a trace of
100,000 firings costs nothing more than a short one, and new firings only grow the
virtual size. A filter (module name substring or glob) keeps a list of matching rows,
extended incrementally as firings arrive. The `/` search hides nothing: its matches are
marked (`•` before the number, and a background).
"""

from __future__ import annotations

import fnmatch
from array import array
from bisect import bisect_left

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ...engine.records.records import Event, firing_heads
from ...engine.records.format import shape_text
from ..history import History
from ..messages import FiringChosen
from .quiet_scrollbar import QuietScrollBar

PHASE_SHORT = {"forward": "fwd", "backward": "bwd"}
# Hook kinds as the hook column shows them (12 cells): autograd nodes of a stepped-into
# call are indented under it.
HOOK_LABEL = {"legacy_backward": "legacy_bwd", "node_pre": "↳ node_pre", "node": "↳ node"}


def hook_label(hook: str) -> str:
    return HOOK_LABEL.get(hook, hook)


def node_cell(event: Event) -> str:
    """The autograd node column; a param_grad firing names the parameter it wrote, a
    final_grad firing the parameter whose .grad it read after the backward."""
    node = (event.grad_fn or "-").removeprefix("torch::autograd::")
    if event.hook in ("param_grad", "final_grad"):
        params = ", ".join(t.target for t in event.tensors if t.target)
        if event.hook == "final_grad":
            return f"{params} .grad after backward" if params else ".grad after backward"
        return f"{params} ← {node}" if params else node
    return node


def module_label(name: str) -> str:
    return name or "(root)"


def nonfinite(event: Event) -> str:
    """"NaN", "Inf" or "" for the worst value among the firing's tensors (from the exact
    counts, which a live record has without computing its other statistics)."""
    flag = ""
    for tensor in event.tensors:
        counts = tensor.nonfinite_counts
        if counts is not None:
            if counts[0]:
                return "NaN"
            if counts[1] or counts[2]:
                flag = "Inf"
    return flag


def main_shape(event: Event) -> str:
    """The shape the shape column shows: a forward firing's output (its inputs are in its
    forward_pre firing), else the first tensor present."""
    tensor = event.main_tensor
    if event.hook == "forward":
        tensor = next((t for t in event.tensors if t.name.startswith("output") and not t.is_missing), tensor)
    if tensor is not None:
        return shape_text(tensor)
    return "None" if event.tensors else "-"


class Timeline(ScrollView, can_focus=True):
    """Every firing so far; the current one is highlighted."""

    COMPONENT_CLASSES = {
        "timeline--header",
        "timeline--cursor",
        "timeline--forward",
        "timeline--backward",
        "timeline--error",
        "timeline--dim",
        "timeline--param",
        "timeline--legacy",
        "timeline--match",
    }

    DEFAULT_CSS = """
    Timeline { background: $surface; overflow-x: hidden; }
    Timeline > .timeline--header { text-style: bold; color: $text-primary; background: $surface; }
    Timeline > .timeline--cursor { background: $surface-lighten-2; text-style: bold; }
    Timeline:focus > .timeline--cursor { background: $block-cursor-background; color: $block-cursor-foreground; text-style: bold; }
    Timeline > .timeline--forward { color: $text-accent; }
    Timeline > .timeline--backward { color: $text-warning; }
    Timeline > .timeline--error { color: $text-error; text-style: bold; }
    Timeline > .timeline--dim { color: $text-muted; }
    Timeline > .timeline--param { color: $text-success; }
    Timeline > .timeline--legacy { color: $text-secondary; text-style: italic; }
    Timeline > .timeline--match { background: $primary-muted; }
    """

    BINDINGS = [
        Binding("up", "row(-1)", "Up", show=False),
        Binding("down", "row(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "edge(0)", "First", show=False),
        Binding("end", "edge(1)", "Last", show=False),
    ]

    def __init__(
        self, history: History, module_width: int = 20, hidden: set[str] | None = None, marks: dict[int, str] | None = None, **kwargs
    ) -> None:
        super().__init__(**kwargs)
        self.history = history
        # Flags by position beside NaN/Inf (`view --against`: where the runs differ).
        self.marks: dict[int, str] = marks or {}
        self.module_width = max(6, min(module_width, 28))
        self.filter_text = ""
        self.hidden: set[str] = set(hidden or ())  # hook kinds left out (legacy_backward when off)
        # Positions matching the filter (None = all), packed: with legacy firings hidden it
        # holds nearly every firing, and a list of ints costs 36 bytes each, this 8.
        self._rows: array | None = array("q") if self.hidden else None
        self._scanned = 0  # positions checked against the filter so far
        self._cache: LRUCache[tuple[int, bool], Strip] = LRUCache(512)
        self._shown = -1
        self._layout_key: tuple[int, int] | None = None
        self._base_style: Style | None = None
        # Kept from paint to paint, dropped with the rows' strips (`_forget_strips`): the
        # header's strip and the component styles (a lookup through the CSS each: most of
        # a row's rendering time).
        self._header_strip: Strip | None = None
        self._styles_kept: dict[tuple[str, bool], Style] = {}
        self._paint: tuple[int, int] | None = None  # (width, scroll_y) of the paint under way
        # Lines as painted (Textual's pipeline applied), by the id of the row strip they were
        # made from, and what else they were made with: `_painted_lines`.
        self._painted: dict[int, tuple[Strip, Strip]] = {}
        self._painted_key: tuple | None = None
        self._columns: list[tuple[str, int]] = []
        self._line_width = 0
        self.search = None  # the `/` search's Matches (ui/search.py): its rows are marked

    @property
    def vertical_scrollbar(self) -> QuietScrollBar:
        """Textual's own property, making a QuietScrollBar: at `n` at the latest firing the
        timeline grows and scrolls by a row, which repaints a ScrollBar that draws the same."""
        if self._vertical_scrollbar is None:
            self._vertical_scrollbar = bar = QuietScrollBar(vertical=True, name="vertical", thickness=self.scrollbar_size_vertical)
            bar.display = False
            self.app._start_widget(self, bar)
        return self._vertical_scrollbar

    # -- data ------------------------------------------------------------------------
    @property
    def row_count(self) -> int:
        return len(self.history) if self._rows is None else len(self._rows)

    def position_at(self, row: int) -> int:
        return row if self._rows is None else self._rows[row]

    def row_of(self, position: int) -> int | None:
        if self._rows is None:
            return position if 0 <= position < len(self.history) else None
        row = bisect_left(self._rows, position)
        return row if row < len(self._rows) and self._rows[row] == position else None

    def grow(self) -> None:
        """Firings were appended to the history."""
        if self._rows is not None:
            self._scan()
        size = Size(self.scrollable_content_region.width, self.row_count + 1)
        if size == self.virtual_size:
            self.refresh()
            return
        # Setting virtual_size asks for a layout of the whole screen (every pane is then
        # drawn again): at each step, for one more row. Only the scrollbars need to know,
        # unless one of them appears or goes.
        bars = (self.show_vertical_scrollbar, self.show_horizontal_scrollbar)
        self.set_reactive(Timeline.virtual_size, size)
        self._scroll_update(size)
        self.refresh(layout=(self.show_vertical_scrollbar, self.show_horizontal_scrollbar) != bars)

    def set_filter(self, text: str) -> None:
        self.filter_text = text.strip()
        self._refilter()

    def set_search(self, matches) -> None:
        """Mark the rows `matches` (ui/search.py Matches, or None) holds."""
        self.search = matches
        self._forget_strips()
        self.refresh()

    def set_hidden(self, hooks: set[str]) -> None:
        """Leave out the firings of these hook kinds."""
        self.hidden = set(hooks)
        self._refilter()

    def _refilter(self) -> None:
        self._rows = None if not self.filter_text and not self.hidden else array("q")
        self._scanned = 0
        self._forget_strips()
        self.grow()
        self.show(self._shown, force=True)

    def _module_matches(self, module: str) -> bool:
        if not self.filter_text:
            return True
        pattern = self.filter_text.lower()
        name = module_label(module).lower()
        if any(c in pattern for c in "*?["):
            return fnmatch.fnmatchcase(name, pattern)
        return pattern in name

    def _scan(self) -> None:
        """Rows for the firings not checked yet: their hook kind and module only, which a
        packed history gives without unpacking a firing (records.firing_heads)."""
        rows = self._rows
        assert rows is not None
        hidden = self.hidden
        matched: dict[str, bool] = {}  # by module: a module's firings are many, its name one
        position = self._scanned
        for hook, _, module, _ in firing_heads(self.history.events, position):
            if hook not in hidden:
                match = matched.get(module)
                if match is None:
                    match = matched[module] = self._module_matches(module)
                if match:
                    rows.append(position)
            position += 1
        self._scanned = position

    # -- cursor ------------------------------------------------------------------------
    def show(self, position: int, force: bool = False) -> None:
        """Highlight firing `position` and scroll it into view."""
        if position == self._shown and not force:
            return
        previous, self._shown = self._shown, position
        row = self.row_of(position)
        before = None if force or previous < 0 else self.row_of(previous)
        if row is None or before is None:
            self.refresh()
        else:
            # Only the two rows whose highlight changed (a whole repaint of the view was
            # most of `N`'s time); a scroll below repaints the rest.
            self.refresh_lines(before + 1)
            self.refresh_lines(row + 1)
        if row is None:
            if self._rows is not None and self._rows:
                row = min(bisect_left(self._rows, position), len(self._rows) - 1)
            else:
                return
        if self.scrollable_content_region.height <= 1:  # not laid out yet
            self.call_after_refresh(self.scroll_row_into_view, row)
        else:
            self.scroll_row_into_view(row)

    def scroll_row_into_view(self, row: int) -> None:
        visible = max(1, self.scrollable_content_region.height - 1)
        top = round(self.scroll_y)
        if row < top:
            self.scroll_to(y=row, animate=False, immediate=True, force=True)
        elif row >= top + visible:
            self.scroll_to(y=row - visible + 1, animate=False, immediate=True, force=True)
        # A scroll made while the scrollbar was still hidden (the rows had just grown past
        # the view) never reaches the bar: without this its thumb shows at the top.
        self.call_after_refresh(self._sync_scrollbar)

    def _sync_scrollbar(self, tries: int = 4) -> None:
        if not self.show_vertical_scrollbar:
            # The bar appears only with the layout that follows the rows' growth: try again
            # after that refresh (a few times at most: there may be nothing to scroll).
            if tries and self.virtual_size.height > self.scrollable_content_region.height:
                self.call_after_refresh(self._sync_scrollbar, tries - 1)
            return
        if self.vertical_scrollbar.position != self.scroll_y:
            self.vertical_scrollbar.position = self.scroll_y

    def _choose_row(self, row: int) -> None:
        if self.row_count == 0:
            return
        row = max(0, min(row, self.row_count - 1))
        self.post_message(FiringChosen(self.position_at(row)))

    def _current_row(self) -> int:
        row = self.row_of(self._shown)
        if row is not None:
            return row
        if self._rows is None:
            return 0
        return min(bisect_left(self._rows, self._shown), max(0, len(self._rows) - 1))

    def action_row(self, delta: int) -> None:
        row = self.row_of(self._shown)
        if row is None and self._rows is not None:
            # The current firing is filtered out: the next row down is the first after it.
            after = bisect_left(self._rows, self._shown)
            row = after - 1 if delta > 0 else after
        self._choose_row((row if row is not None else 0) + delta)

    def action_page(self, direction: int) -> None:
        page = max(1, self.scrollable_content_region.height - 2)
        self._choose_row(self._current_row() + direction * page)

    def action_edge(self, last: int) -> None:
        self._choose_row(self.row_count - 1 if last else 0)

    def on_click(self, event: events.Click) -> None:
        if event.y >= 1:
            row = round(self.scroll_y) + event.y - 1
            if row < self.row_count:
                self._choose_row(row)

    # -- rendering ---------------------------------------------------------------------
    # (key, title, width, drop order: higher goes first when the pane is narrow; 0: never).
    # What tells firings apart stays at any width: number, hook, module, call (a shared
    # cell's calls look alike without it) and the NaN/Inf flag.
    COLUMNS = (("index", "#", 0, 0), ("phase", "ph", 3, 3), ("hook", "hook", 12, 0), ("module", "module", 0, 0),
               ("call", "call", 4, 0), ("flag", "!", 4, 0), ("shape", "shape", 16, 1), ("node", "autograd node", 0, 2))
    MODULE_MIN, MODULE_SHORT, SHAPE_MIN, NODE_MIN = 8, 12, 12, 12

    def _layout(self, width: int) -> list[tuple[str, int]]:
        """The columns that fit in `width` cells, and their widths."""
        digits = len(str(max(0, len(self.history) - 1))) + 1 + self.history.sub_width
        key = (width, digits)
        if key == self._layout_key:
            return self._columns
        widths = {k: w for k, _, w, _ in self.COLUMNS}
        widths["index"] = max(3, digits)
        widths["module"] = self.module_width
        widths["node"] = self.NODE_MIN
        keep = [k for k, *_ in self.COLUMNS]

        def total() -> int:
            return sum(widths[k] for k in keep) + len(keep) - 1

        # Narrow: drop the least useful columns first; before the shape goes, module names
        # are shortened to MODULE_SHORT (they keep their leaf) and the shape column to
        # SHAPE_MIN (most shapes fit it whole); without the shape, names to MODULE_MIN.
        for k in [c[0] for c in sorted(self.COLUMNS, key=lambda c: -c[3]) if c[3] > 0]:
            if total() <= width:
                break
            if k == "shape":
                for short, floor in (("module", self.MODULE_SHORT), ("shape", self.SHAPE_MIN)):
                    widths[short] = max(min(widths[short], floor), widths[short] - (total() - width))
                if total() <= width:
                    break
            keep.remove(k)
        if total() > width:
            widths["module"] = max(self.MODULE_MIN, widths["module"] - (total() - width))
        spare = width - total()
        if "node" in keep:
            widths["node"] += max(0, spare)
        self._columns = [(k, widths[k]) for k in keep]
        self._line_width = total()
        self._layout_key = key
        self._forget_strips()
        return self._columns

    def _forget_strips(self) -> None:
        self._cache.clear()
        self._header_strip = None
        self._painted.clear()

    def _kept_style(self, name: str, partial: bool = False) -> Style:
        key = (name, partial)
        style = self._styles_kept.get(key)
        if style is None:
            style = self._styles_kept[key] = self.get_component_rich_style(name, partial=partial)
        return style

    def on_resize(self) -> None:
        self.virtual_size = Size(self.scrollable_content_region.width, self.row_count + 1)
        self._forget_strips()
        if self.row_count:  # a smaller view must still hold the current firing
            self.call_after_refresh(self.scroll_row_into_view, self._current_row())

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._forget_strips()
        self._styles_kept.clear()

    def render_lines(self, crop: Region) -> list[Strip]:
        # rich_style walks the ancestors, the content region is computed: once per repaint,
        # not once per line.
        self._base_style = self.rich_style
        self._paint = (self.scrollable_content_region.width, self.scroll_offset.y)
        try:
            return self._painted_lines(crop)
        finally:
            self._paint = None

    def _painted_lines(self, crop: Region) -> list[Strip]:
        """The widget's lines in `crop`, each as Textual's line pipeline (tint, opacity,
        filters) made it from the row's strip, kept by strip: a scroll by one row at `n`
        moves rows that were painted already, and repainting them all through that pipeline
        was most of the timeline's paint. What the pipeline adds depends on the styles (a
        change drops what is kept: notify_style_update), the size, the line filters, the
        backgrounds beneath and the opacity (its ancestors' too)."""
        if any(self.styles.gutter):  # padding or a border: line y is not row strip y
            return super().render_lines(crop)
        size = self.region.size  # what Textual's pipeline paints (crops are within it)
        key = (size, tuple(self.get_line_filters()), self.background_colors, self.opacity)
        if key != self._painted_key:
            self._painted.clear()
            self._painted_key = key
        full = (0, size.width)
        lines: list[Strip | None] = []
        contents: list[Strip] = []
        for y in crop.line_range:
            content = self.render_line(y)
            kept = self._painted.get(id(content))
            lines.append(kept[1] if kept is not None and kept[0] is content else None)
            contents.append(content)
        if len(self._painted) > 4 * max(1, size.height):
            self._painted.clear()
        # The others through Textual's pipeline, a run of adjacent lines at a time (the
        # two rows whose highlight changed are next to each other).
        i = 0
        while i < len(lines):
            if lines[i] is not None:
                i += 1
                continue
            end = i
            while end < len(lines) and lines[end] is None:
                end += 1
            made = super().render_lines(Region(0, crop.y + i, size.width, end - i))
            for j, line in enumerate(made, i):
                lines[j] = line
                self._painted[id(contents[j])] = (contents[j], line)
            i = end
        if crop.column_span != full:
            return [line.crop(*crop.column_span) for line in lines]  # type: ignore[union-attr]
        return lines  # type: ignore[return-value]

    def render_line(self, y: int) -> Strip:
        width, scroll_y = self._paint or (self.scrollable_content_region.width, self.scroll_offset.y)
        base = self._base_style or self.rich_style
        self._layout(width)
        if y == 0:
            if self._header_strip is None:
                self._header_strip = self._header()
            strip = self._header_strip
        else:
            row = scroll_y + y - 1
            if row >= self.row_count:
                return Strip.blank(width, base)
            position = self.position_at(row)
            key = (position, position == self._shown)
            strip = self._cache.get(key)
            if strip is None:
                strip = self._cache[key] = self._row(position, key[1])
        return strip.crop_extend(0, width, base)

    def _cells(self, cells: dict[str, tuple[str, Style | None]], row_style: Style) -> Strip:
        text = Text(no_wrap=True, end="")
        for i, (key, width) in enumerate(self._columns):
            content, style = cells[key]
            if i:
                text.append(" ")
            if len(content) > width:
                # Module names keep their end (the leaf is what tells them apart).
                content = "…" + content[len(content) - width + 1 :] if key == "module" else content[: width - 1] + "…"
            content = content.rjust(width) if key in ("index", "call") else content.ljust(width)
            text.append(content, style)
        segments = [Segment(s.text, row_style + s.style if s.style else row_style) for s in text.render(self.app.console)]
        return Strip(segments, self._line_width).extend_cell_length(self._line_width, row_style)

    def _flag_cell(self, event: Event, selected: bool, position: int) -> tuple[str, Style | None]:
        flag = nonfinite(event)
        text = f"{flag}!" if flag else self.marks.get(position, "")
        if not text:
            return "", None
        return text, None if selected else self._kept_style("timeline--error", partial=True)

    def _header(self) -> Strip:
        style = self._kept_style("timeline--header")
        return self._cells({k: (title, None) for k, title, _, _ in self.COLUMNS}, (self._base_style or self.rich_style) + style)

    def _row(self, position: int, selected: bool) -> Strip:
        event = self.history.events[position]
        base = self._base_style or self.rich_style
        matched = self.search is not None and position in self.search
        if selected:
            # One uniform highlight, and a marker that survives NO_COLOR.
            base = base + self._kept_style("timeline--cursor")
            phase_style = dim = None
        else:
            if matched:
                base = base + self._kept_style("timeline--match", partial=True)
            kind = "error" if event.hook == "error" else "backward" if event.phase == "backward" else "forward"
            phase_style = self._kept_style(f"timeline--{kind}", partial=True)
            dim = self._kept_style("timeline--dim", partial=True)
        hook_style = phase_style
        if not selected and event.hook in ("param_grad", "final_grad", "legacy_backward"):
            hook_style = self._kept_style(
                "timeline--legacy" if event.hook == "legacy_backward" else "timeline--param", partial=True
            )
        elif not selected and event.hook in ("node_pre", "node"):
            hook_style = dim
        index = f"▶{event.number}" if selected else f"•{event.number}" if matched else event.number
        return self._cells(
            {
                "index": (index, dim),
                "phase": (PHASE_SHORT.get(event.phase, event.phase[:3]), phase_style),
                "hook": (hook_label(event.hook), hook_style),
                "module": (module_label(event.module), None),
                "call": (str(event.call), dim),
                "flag": self._flag_cell(event, selected, position),
                "shape": (main_shape(event), None),
                "node": (node_cell(event), dim),
            },
            base,
        )
