"""A scrollable block of text whose new text never lays the screen out again.

A Static of `height: auto` in a scrolling container (the usual way) changes height with
its text, and a change of height asks for a layout of the whole screen, which then
arranges and draws every pane again (and the Static's new size asks for a second one).
The Explain pane's text changes length at almost every step. Here the text is drawn with
the Line API instead, like the timeline: a new text only changes the virtual height, which
only the scrollbar needs to know, unless the bar appears or goes.

The lines are rendered the way a Static renders them (Textual's Visual), so the pane
looks the same as before. A new text whose lines take the same room repaints only the lines
that differ from the old text's (the Explain pane of the next firing of the same kind differs
in a few words): a whole repaint of the pane drew its blank lines too, at every step.
"""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, Group, RenderableType
from rich.style import Style
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.visual import Visual, visualize


class _Counted:
    """A Rich renderable drawn as it is, its lines counted on the way as Textual's RichVisual
    counts them for its height (the newlines of its segments): the text is rendered once for
    its lines and its height, not twice."""

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable
        self.newlines = 0

    def __rich_console__(self, console: Console, options: ConsoleOptions):
        for segment in console.render(self.renderable, options):
            self.newlines += segment.text.count("\n")
            yield segment


class TextView(ScrollView, can_focus=True):
    DEFAULT_CSS = """
    TextView { overflow-x: hidden; overflow-y: auto; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.renderable: RenderableType = ""  # what the pane shows now
        self._lines: tuple[int, list[Strip], int] | None = None  # (width, lines, height) of the renderable

    def set_renderable(self, renderable: RenderableType) -> None:
        old = self._lines
        scrolled = self.scroll_offset
        self.renderable = renderable
        self._lines = None
        self._fit()
        new = self._lines
        if old is None or new is None or old[0] != new[0] or self.scroll_offset != scrolled:
            self.refresh()
            return
        # The same width and scroll offset: the lines in view that changed.
        old_lines, new_lines = old[1], new[1]
        top = round(self.scroll_y)
        end = min(max(len(old_lines), len(new_lines)), top + self.size.height)
        run_start = None  # adjacent changed lines are refreshed together (one region each run)
        for row in range(top, end + 1):  # one past the end: a run reaching it is refreshed too
            changed = row < end and (row >= len(old_lines) or row >= len(new_lines) or old_lines[row] != new_lines[row])
            if changed and run_start is None:
                run_start = row
            elif not changed and run_start is not None:
                self.refresh_lines(run_start, row - run_start)
                run_start = None

    def _render_lines_at(self, width: int) -> tuple[list[Strip], int]:
        """The lines at `width`, and the height a Static would give them (a trailing
        blank line of a Rich renderable is drawn but not counted)."""
        if self._lines is None or self._lines[0] != width:
            counted = isinstance(self.renderable, Group)
            renderable = _Counted(self.renderable) if counted else self.renderable
            visual = visualize(self, renderable, markup=False)
            if width > 0:
                strips = Visual.to_strips(self, visual, width, None, self.visual_style)
                height = renderable.newlines if counted else visual.get_height(self.styles, width)
                self._lines = (width, strips, height)
            else:
                self._lines = (width, [], 0)
        return self._lines[1], self._lines[2]

    def _fit(self) -> None:
        """The virtual size for the text at the current width, and the bar it needs."""
        if not self.is_mounted:
            return
        width, height = self.size  # inside the padding; the bar takes a column of it
        if width <= 0:
            return  # not laid out yet: on_resize fits it
        _, lines = self._render_lines_at(width)
        bar = self.styles.scrollbar_size_vertical if self.styles.overflow_y == "scroll" or (self.styles.overflow_y == "auto" and lines > height) else 0
        if bar:
            _, lines = self._render_lines_at(width - bar)
        size = Size(width - bar, lines)
        if size == self.virtual_size:
            return
        bars = (self.show_vertical_scrollbar, self.show_horizontal_scrollbar)
        self.set_reactive(TextView.virtual_size, size)
        self._scroll_update(size)
        if (self.show_vertical_scrollbar, self.show_horizontal_scrollbar) != bars:
            self.refresh(layout=True)  # else the caller repaints what changed

    def on_resize(self) -> None:
        self._fit()
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._lines = None

    _paint: tuple[int, Style] | None = None  # (width, style) of the paint under way

    def render_lines(self, crop: Region) -> list[Strip]:
        # The width and rich_style (a walk up every ancestor) once per paint, not per line.
        self._paint = (self.scrollable_content_region.width, self.rich_style)
        try:
            return super().render_lines(crop)
        finally:
            self._paint = None

    def render_line(self, y: int) -> Strip:
        width, style = self._paint or (self.scrollable_content_region.width, self.rich_style)
        lines, _ = self._render_lines_at(width)
        row = self.scroll_offset.y + y
        if 0 <= row < len(lines):
            return lines[row].crop_extend(0, width, style)
        return Strip.blank(width, style)
