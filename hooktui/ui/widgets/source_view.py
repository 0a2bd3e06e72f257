"""The code around the current firing's call site, that line highlighted."""

from __future__ import annotations

import linecache

from rich.console import Group, RenderableType
from rich.text import Text
from textual.content import Content
from textual.highlight import highlight
from textual.widget import Widget

from ...engine.records import Event, SourceLocation
from ..paths import display_path


def read_lines(filename: str) -> list[str]:
    lines = linecache.getlines(filename)
    if not lines:
        linecache.checkcache(filename)
        lines = linecache.getlines(filename)
    return lines


class SourceView(Widget, can_focus=True):
    DEFAULT_CSS = """
    SourceView { height: 1fr; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, event: Event | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self._source: SourceLocation | None = event.source if event else None
        self._event = event

    def show(self, event: Event | None) -> None:
        source = event.source if event else None
        self._event = event
        if source != self._source or event is None:
            self._source = source
            self.refresh()

    def render(self) -> RenderableType:
        source = self._source
        if source is None:
            if self._event is None:
                return Text("")
            return Text("no source location: the root module is called by hooktui, not by your code", style="dim")
        title = Text.assemble((display_path(source.filename), "bold"), f":{source.lineno}", (f" in {source.function}", "dim"))
        lines = read_lines(source.filename)
        if not lines or source.lineno > len(lines):
            return Group(
                title,
                Text(f"{source.filename} is not readable here (a trace from another machine?); the recorded line:", style="dim italic"),
                Text(f"{source.lineno:>5} ▶ {source.line}", style="bold"),
            )
        height = max(1, self.content_size.height - 1)
        before = (height - 1) // 2
        first = max(1, source.lineno - before)
        last = min(len(lines), first + height - 1)
        first = max(1, min(first, last - height + 1))
        ansi = self.app.current_theme.name.startswith("ansi")
        code = self._code(lines, first, last, source.lineno, self.content_size.width, ansi)
        return Content("\n").join([Content.from_rich_text(title), *code])

    @staticmethod
    def _code(lines: list[str], first: int, last: int, current: int, width: int, ansi: bool = False) -> list[Content]:
        code = highlight("".join(lines[first - 1 : last]), language="python").split("\n")
        width = len(str(last))
        out = []
        for number, line in zip(range(first, last + 1), code, strict=False):
            here = number == current
            gutter = Content.styled(f"{number:>{width}} {'▶' if here else ' '} ", "bold $text-warning" if here else "$text-muted")
            row = gutter + line.rstrip()
            if here:
                # A tinted bar; ANSI themes cannot blend colours, so bold there.
                row = row.stylize("bold") if ansi else row.extend_right(max(0, width - row.cell_length)).stylize("on $warning 15%")
            out.append(row)
        return out
