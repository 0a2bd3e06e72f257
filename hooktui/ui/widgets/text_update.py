"""Putting new text in a Static without laying the whole screen out again when its
height cannot have changed.

`Static.update()` asks for a layout of the screen every time (the text might need another
height), and a layout re-renders every pane: at each step that was most of the app's
time. A Static whose height is `auto` keeps its height when the new text wraps to as
many lines as the old one at the same width: then a repaint of the Static is enough.
And the same text again (a title that stays while the firing changes) draws nothing.
"""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text
from textual.widgets import Static


def set_text(static: Static, text: RenderableType) -> None:
    """`static.update(text)`, with a layout only when the number of lines may differ."""
    if isinstance(text, str):
        text = Text(text)
    width = static.content_size.width
    shown = getattr(static, "_hooktui_shown", None)
    if shown is not None and shown[0] is getattr(static, "content", None) and _same(shown[1], text):
        return  # the same text: nothing to draw again (a refresh repaints a whole pane)
    static._hooktui_shown = None  # type: ignore[attr-defined]
    lines = _lines(static, text, width) if width > 0 and static.is_mounted else None
    same = lines is not None and (width, lines) == getattr(static, "_hooktui_lines", None)
    static._hooktui_lines = (width, lines)  # type: ignore[attr-defined]
    static.update(text, layout=not same)
    if isinstance(text, Text):
        static._hooktui_shown = (text, text.copy())  # type: ignore[attr-defined]


def _same(a: Text, b: RenderableType) -> bool:
    """Equal as drawn: Text's own == leaves out its style and layout settings."""
    return (isinstance(b, Text) and a.plain == b.plain and a.spans == b.spans and a.style == b.style
            and (a.justify, a.overflow, a.no_wrap, a.end, a.tab_size) == (b.justify, b.overflow, b.no_wrap, b.end, b.tab_size))


def _lines(static: Static, renderable: RenderableType, width: int) -> int:
    console = static.app.console
    if isinstance(renderable, Text):
        plain = renderable.plain
        if "\n" not in plain and "\t" not in plain and renderable.cell_len <= width:
            return 1  # fits on one line: no need to wrap it to count (the values title, a one-line note)
        return len(renderable.wrap(console, width))
    return len(console.render_lines(renderable, console.options.update_width(width), pad=False))
