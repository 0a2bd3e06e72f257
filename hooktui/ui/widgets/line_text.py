"""One line of Rich text drawn as Textual draws it, without Textual's Content pipeline.

A widget whose `render()` hands Textual a Rich Text (the status line; a Static updated
with one, as the notes line and the values pane's title are) has it turned into a
Content at every paint (each span's Rich style converted to a Textual style), the
Content wrapped and formatted into lines, and each run of characters given a Rich style
made again from the widget's style, the spans' and its offset (for text selection): ~0.5
ms for the status line, though the text changes a little at a step and its styles not at
all. For a text of one line that fits its width, what that pipeline makes follows from
the text's spans and the widget's style: `LineStrips.strip` makes the same Strip,
segment for segment and style for style (offsets included), with each span's style
converted once (`tests/ui/test_line_text.py` compares the two at several widths, after a
resize and a theme change).

Anything else goes through Textual's own pipeline (`None` is returned): a text with a
newline, a tab or a control character (Content strips control characters, moving the
spans), one wider than the width (wrapped or cut by Content), a style with meta (links,
`@click`: Textual restyles those), selected text, and CSS that formats text (`text-align`,
`line-pad`, `content-align`). What Textual's pipeline does after the widget's lines
(padding, background, tint, opacity, the line filters that make `dim` a colour) is left
to it: `render_line` returns what `Widget.render_line` would.
"""

from __future__ import annotations

from operator import itemgetter

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style as RichStyle
from rich.text import Text
from textual.content import Content
from textual.strip import Strip
from textual.style import Style
from textual.widget import Widget
from textual.widgets import Static


class LineStrips:
    """For one widget: the Strip Textual's Content pipeline makes of a one-line Rich Text
    at a width, made from the text's spans directly, the last one kept (a repaint of the
    same text and width at the same style hands it back)."""

    def __init__(self) -> None:
        self._converted: dict[tuple, Style] = {}  # a span's style as Content converts it
        self._styled: dict[tuple, RichStyle] = {}  # a run's Rich style, by its styles and offset
        self._kept: tuple[tuple, Strip] | None = None

    def forget(self) -> None:
        """Drop what was made from the styles (a theme or CSS change)."""
        self._converted.clear()
        self._styled.clear()
        self._kept = None

    def strip(self, widget: Widget, text: Text, width: int) -> Strip | None:
        """The widget's content line 0 for `text` at `width` cells, as `Visual.to_strips`
        makes it from `Content.from_rich_text(text)`; None where that pipeline would do
        more than this (see the module's docstring)."""
        if not isinstance(text, Text) or width <= 0:
            return None
        plain = text.plain
        style = widget.visual_style
        key = (plain, tuple(text.spans), text.style, width, style)
        if self._kept is not None and self._kept[0] == key and widget.text_selection is None:
            return self._kept[1]
        if not _formats_plainly(widget) or widget.text_selection is not None:
            return None
        if "\n" in plain or "\t" in plain or cell_len(plain) > width or Content(plain).plain != plain:
            return None
        spans = self._spans(widget, text)
        if spans is None:
            return None
        if len(self._styled) > 2048:
            self._styled.clear()
        strip = Strip(_segments(plain, spans, style, widget._get_style, self._styled), cell_len(plain))
        self._kept = (key, strip)
        return strip

    def _spans(self, widget: Widget, text: Text) -> list[tuple[int, int, Style | str]] | None:
        """The spans as `Content.from_rich_text` makes them: each Rich style converted
        (a str parsed by the app's console first), the text's own style first, over it all
        (a str left for the widget to parse at the render, as Content leaves it)."""
        app = widget.app
        theme = app.ansi_theme
        spans: list[tuple[int, int, Style | str]] = []
        for start, end, rich in text.spans:
            key = (rich, theme)
            converted = self._converted.get(key)
            if converted is None:
                parsed = app.console.get_style(rich) if isinstance(rich, str) else rich
                if parsed._meta is not None:  # links and `@click`: Textual restyles them
                    return None
                converted = self._converted[key] = Style.from_rich_style(parsed, theme)
            spans.append((start, end, converted))
        own = text.style
        if own:
            if not isinstance(own, str):
                if own._meta is not None:
                    return None
                own = Style.from_rich_style(own, theme)
            if own and len(text.plain):  # Content.stylize_before: nothing on an empty text
                spans.insert(0, (0, len(text.plain), own))
        if len(self._converted) > 256:
            self._converted.clear()
        return spans


def _formats_plainly(widget: Widget) -> bool:
    """True where the CSS leaves a line that fits as it is (Content's `_wrap_and_format`
    and `Visual.to_strips` then only split it into runs of one style)."""
    styles = widget.styles
    get_rule = styles.get_rule
    return (get_rule("text_align", "left") in ("left", "start") and not get_rule("line_pad", 0)
            and styles.content_align == ("left", "top"))


def _segments(plain: str, spans: list[tuple[int, int, Style | str]], base: Style, parse, styled: dict) -> list[Segment]:
    """`_FormattedLine.to_strip` of line 0 at offset 0, aligned left: `Content.render`'s
    runs (cut at every span's start and end), each styled base + (base + its spans, in
    order) with its offset in the meta. `styled` keeps those Rich styles by the styles
    combined and the offset (the status line's first parts stay where they are)."""
    if not spans:
        key = ((base,), 0)
        rich = styled.get(key)
        if rich is None:
            rich = styled[key] = (base + base).rich_style_with_offset(0, 0)
        return [Segment(plain, rich)]
    style_map: dict[int, Style] = {0: base}
    for index, (_, _, style) in enumerate(spans, 1):
        style_map[index] = parse(style) if isinstance(style, str) else style
    marks = [(0, False, 0), *((s, False, i) for i, (s, _, _) in enumerate(spans, 1)),
             *((e, True, i) for i, (_, e, _) in enumerate(spans, 1)), (len(plain), True, 0)]
    marks.sort(key=itemgetter(0, 1))
    stack: list[int] = []
    segments: list[Segment] = []
    x = 0
    for (offset, leaving, style_id), (next_offset, _, _) in zip(marks, marks[1:]):
        if leaving:
            stack.remove(style_id)
        else:
            stack.append(style_id)
        if next_offset > offset:
            key = (tuple([style_map[i] for i in sorted(stack)]), x)
            rich = styled.get(key)
            if rich is None:
                rich = styled[key] = (base + Style.combine(key[0])).rich_style_with_offset(x, 0)
            run = plain[offset:next_offset]
            segments.append(Segment(run, rich))
            x += len(run)
    return segments


class LineStatic(Static):
    """A Static whose one-line Rich Texts are drawn by `LineStrips` (the notes line, the
    values pane's title); any other content as a Static draws it."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._line_strips = LineStrips()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._line_strips.forget()

    def render_line(self, y: int) -> Strip:
        text = self.content
        width = self.size.width
        strip = self._line_strips.strip(self, text, width) if isinstance(text, Text) and not self.BLANK else None
        if strip is None:
            return super().render_line(y)
        # Widget.render_line: the lines under the text are blank (a height above 1 set by CSS).
        return strip if y == 0 else Strip.blank(width, self.visual_style.rich_style)

