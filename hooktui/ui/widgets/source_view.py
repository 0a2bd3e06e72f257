"""The code around the current firing's call site, that line highlighted.

The lines come from the app's Source (`lines_for`): a saved trace's stored lines, or a local
file read only when it is a small regular Python file (engine/records/source_lines.py). Never a path
opened on a record's word alone."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from rich.console import Group, RenderableType
from rich.text import Text
from textual.content import Content
from textual.highlight import highlight
from textual.widget import Widget

from ...engine.records.records import Event, SourceLocation, position_of
from ...visible import visible
from ..paths import display_path

LinesFor = Callable[[str], "Mapping[int, str] | None"]


def call_site(event: Event | None, events: Sequence[Event]) -> SourceLocation | None:
    """Where the user's code made the call of `event`. A param_grad firing is recorded inside
    torch (AccumulateGrad), a final_grad firing after the backward: show the call of its
    module's forward firing instead."""
    if event is None:
        return None
    if event.hook in ("param_grad", "final_grad") and event.forward_index is not None:
        position = position_of(events, event.forward_index)
        if position is not None and events[position].source is not None:
            return events[position].source
    return event.source


def window(lines: Mapping[int, str], lineno: int, height: int) -> tuple[int, int] | None:
    """First and last line number of the run of known lines around `lineno` that fits
    `height`, the line itself about in the middle; None when `lineno` is not known."""
    if lineno not in lines:
        return None
    first = last = lineno
    before = (height - 1) // 2
    while first - 1 in lines and lineno - (first - 1) <= before:
        first -= 1
    while last + 1 in lines and last - first + 1 < height:
        last += 1
    while first - 1 in lines and last - first + 1 < height:
        first -= 1
    return first, last


class SourceView(Widget, can_focus=True):
    DEFAULT_CSS = """
    SourceView { height: 1fr; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, event: Event | None = None, lines_for: LinesFor | None = None, location: SourceLocation | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self._source: SourceLocation | None = location if location is not None else (event.source if event else None)
        self._event = event
        self._lines_for = lines_for or (lambda filename: None)
        self._held: tuple[Event | None, SourceLocation | None] | None = None  # given while hidden, not drawn yet

    def show(self, event: Event | None, location: SourceLocation | None = None) -> None:
        self._held = None
        source = location if location is not None else (event.source if event else None)
        self._event = event
        if source != self._source or event is None:
            self._source = source
            self.refresh()

    def hold(self, event: Event | None, location: SourceLocation | None = None) -> None:
        """Take what `show` takes without drawing it: the pane is behind another tab.
        `up_to_date` shows it when shown or read."""
        self._held = (event, location)

    def up_to_date(self) -> SourceView:
        """This view, showing the call site it was last given."""
        if self._held is not None:
            self.show(*self._held)
        return self

    def on_show(self) -> None:
        self.up_to_date()

    def render(self) -> RenderableType:
        source = self._source
        if source is None:
            if self._event is None:
                return Text("")
            return Text("no source location: the root module is called by hooktui, not by your code", style="dim")
        title = Text.assemble((display_path(source.filename), "bold"), f":{source.lineno}", (f" in {source.function}", "dim"))
        lines = self._lines_for(source.filename) or {}
        height = max(1, self.content_size.height - 1)
        span = window(lines, source.lineno, height)
        if span is None:
            return Group(
                title,
                Text(f"{source.filename} is not readable here (a trace from another machine?); the recorded line:", style="dim italic"),
                Text(f"{source.lineno:>5} ▶ {source.line}", style="bold"),
            )
        ansi = self.app.current_theme.name.startswith("ansi")
        code = self._code(lines, *span, source.lineno, self.content_size.width, ansi)
        return Content("\n").join([Content.from_rich_text(title), *code])

    @staticmethod
    def _code(lines: Mapping[int, str], first: int, last: int, current: int, width: int, ansi: bool = False) -> list[Content]:
        # Stored or local lines are text like any other from a record: control characters
        # made visible before they are highlighted.
        code = highlight("\n".join(visible(lines[n].expandtabs(4)) for n in range(first, last + 1)), language="python").split("\n")
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
