"""A scrollbar that repaints only when what it draws changes.

Textual's ScrollBar repaints itself whenever its position or the sizes it shows change,
and a scrolling widget also refreshes it every time its virtual size changes. The
timeline at the latest firing does both at every `n`: it grows by one row and scrolls by
one. On 5,000 rows in a view of 15 the thumb is one cell tall and moves one eighth of a
cell every ~40 rows, so the bar drawn is nearly always the one on screen already; drawing
its 15 lines again through Textual's line pipeline was 2 ms of each step.

This bar keeps the lines it painted last, with what they show (the bar's glyphs and style
at its size, from Textual's own ScrollBarRender.render_bar, the part of it painted, the
line filters, the backgrounds beneath, the opacity), and hands them back when asked to paint the same again. Everything else
is Textual's: its values are set and it is refreshed as before (the comparison is made at
the paint, after a step's changes have all been made: growing by a row moves the thumb
for a moment, the scroll that follows puts it back). Anything that changes the drawing (a
thumb that moves, a new size, hover, grab, a new style or theme) draws it again.
"""

from __future__ import annotations

from textual.geometry import Region
from textual.scrollbar import ScrollBar
from textual.strip import Strip


class QuietScrollBar(ScrollBar):
    """A ScrollBar that hands back the lines it painted last when it would draw them again."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._painted: tuple[tuple, list[Strip]] | None = None  # (what was drawn, where, how; its lines)

    def drawing(self) -> tuple:
        """What the bar draws now: its size, its style and its segments (as ScrollBar.render
        and ScrollBarRender.render_bar make them)."""
        bar = self.render()
        length = self.size.height if self.vertical else self.size.width
        segments = type(bar).render_bar(
            size=length,
            virtual_size=bar.virtual_size,
            window_size=bar.window_size,
            position=bar.position,
            thickness=bar.thickness,
            vertical=bar.vertical,
        )
        return (self.size, str(bar.style), tuple(segments.segments))

    def render_lines(self, crop: Region) -> list[Strip]:
        # The backgrounds under it too: Textual's pipeline puts them in the bar's lines,
        # and they change with its parent's (a focused timeline's tint).
        key = (self.drawing(), crop, tuple(self.get_line_filters()), self.background_colors, self.opacity)
        if self._painted is not None and self._painted[0] == key:
            return self._painted[1]
        lines = super().render_lines(crop)
        self._painted = (key, lines)
        return lines
