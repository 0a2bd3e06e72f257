"""One-line table cells as segments, without Rich: what the values grid and the tensors
table draw their cells with.

A DataTable renders each cell as `Styled(Padding(text, (0, padding)), pre, post)` through
Rich's console (measuring, wrapping and justifying a renderable of any kind). For a one-line
Text without spans the result is a handful of segments that follow from the text, its
style and the cell's width: `cell_segments` makes them directly
(tests/ui/test_pane_speed_parts.py checks them against Rich's own rendering).
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style


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


class KeptPaintStyles:
    """For a Line-API widget (mixed in before its ScrollView): the styles a paint draws
    with, from its `_styles()` (a dict whose "base" is the widget's `rich_style`), kept from
    one paint to the next. A refresh drops Textual's own cache of component styles, and
    taking them again was ~1 ms a paint; they are taken again when the CSS that applies
    changes (focus, theme, classes) or the widget's own style does (the background around
    it). `render_line` reads them from `_paint` (None outside `render_lines`)."""

    _kept_styles: dict | None = None  # the styles of the last paint
    _paint: dict | None = None  # the styles of the paint under way

    def _styles(self) -> dict:
        raise NotImplementedError

    def notify_style_update(self) -> None:
        super().notify_style_update()  # type: ignore[misc]
        self._kept_styles = None

    def render_lines(self, crop):
        base = self.rich_style  # type: ignore[attr-defined]
        if self._kept_styles is None or self._kept_styles["base"] != base:
            self._kept_styles = self._styles()
        self._paint = self._kept_styles
        try:
            return super().render_lines(crop)  # type: ignore[misc]
        finally:
            self._paint = None
