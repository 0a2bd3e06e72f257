"""The status line: the facts about the current firing, most important first.

At any width it shows, in this order, the state, the firing number, the module, the call,
the hook and NaN/Inf flags; then, as far as they fit whole, the `/` search (`/grad_out  3/17`),
the phase, where in the firings, the two ranks compared (`view A --against B` of two ranks'
files), the run's time and totals, the module's type, breakpoints and the loss. A part that
does not fit is left out, never cut in the middle (`loss:` with nothing after it said
nothing), except why the run stopped here: its beginning is cut to fit (a long `--break-if`
expression was left out at 80 columns while NaN and module stops showed theirs)."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.strip import Strip
from textual.widget import Widget

from ...engine.analysis.breakpoints import Stop
from ...engine.records.records import Event
from .line_text import LineStrips
from .timeline import module_label, nonfinite

STATE_STYLE = {
    "running": "bold black on yellow",
    "paused": "bold black on cyan",
    "finished": "bold black on green",
    "failed": "bold white on red",
    "quit": "bold",
    "replay": "bold black on magenta",
    "ready": "bold",
}


@dataclass
class StatusInfo:
    state: str
    event: Event | None
    position: int
    total: int
    more_coming: bool
    loss: str
    summary: str = ""
    breakpoints: tuple[str, ...] = ()
    break_on_backward: bool = False
    value_breakpoints: tuple[str, ...] = ()  # labels of the non-module breakpoints
    stop: Stop | None = None  # why the run stopped at this firing
    at_backward_stop: bool = False  # B's break stopped the run here
    wall_time: float | None = None  # seconds the model ran, shown once the run is done
    against: str = ""  # `view A --against B` of two ranks' files: "rank 0 vs rank 1"
    # The `/` search on: its query and where among its matches (`/grad_out`, `3/17`: search_actions.py).
    search: tuple[str, str] | None = None


def status_parts(s: StatusInfo) -> list[Text]:
    """Every part of the status line, most important first."""
    parts = [Text(f" {s.state} ", STATE_STYLE.get(s.state, "bold"))]
    event = s.event
    if event is not None:
        parts.append(Text(f"#{event.number}", "bold"))
        parts.append(Text(module_label(event.module), "bold"))
        parts.append(Text(f"call {event.call}"))
        parts.append(Text(event.hook, "italic"))
        flag = nonfinite(event)
        if flag:
            parts.append(Text(f"{flag}!", "bold white on red"))
        if s.search:  # before a stop's reason, which may be cut to the width left
            parts.append(_search_part(*s.search))
        if s.stop is not None:
            parts.append(Text(f"■ {s.stop.breakpoint.label}", "bold red", end=CUTTABLE))
        elif s.at_backward_stop:
            parts.append(Text("■ backward starts (B)", "bold red"))
        if not event.hook.startswith(event.phase):  # `backward_pre` says its phase already
            parts.append(Text(event.phase))
        position = Text(f"{s.position + 1}/{s.total}{' so far' if s.more_coming else ''}", "dim")
        if s.position < s.total - 1:
            position.append(" (history)", "bold yellow")
        parts.append(position)
        if s.against:
            parts.append(Text(s.against, "bold magenta"))
    elif s.total == 0:
        parts.append(Text("waiting for the first firing"))
        if s.search:
            parts.append(_search_part(*s.search))
    if s.summary:
        if s.wall_time is not None:
            parts.append(Text(f"ran {s.wall_time:.2f} s", "green"))
        parts.append(Text(s.summary, "green"))
    if event is not None and event.module_type:
        parts.append(Text(event.module_type, "dim"))
    marks = []
    if len(s.breakpoints) in (1, 2):
        marks.append("● " + ", ".join(module_label(m) for m in s.breakpoints))
    elif s.breakpoints:
        marks.append(f"● {len(s.breakpoints)} breakpoints")
    if s.break_on_backward:
        marks.append("● at backward")
    marks += [f"● {label}" for label in s.value_breakpoints]
    if marks:
        parts.append(Text(" ".join(marks), "red"))
    parts.append(Text(f"loss: {s.loss}", "dim"))
    return parts


class _SearchPart(Text):
    """`/query  3/17`: where it does not fit whole, the query is cut and the count kept."""

    query = where = ""

    def cut(self, room: int) -> Text | None:
        """This part in `room` cells, its query cut; None when too little of it would be left."""
        keep = room - (len(self.where) + 2 if self.where else 0)
        if keep < SHORTEST_QUERY:
            return None
        query = Text(self.query)
        query.truncate(keep, overflow="ellipsis")
        return _search_part(query.plain, self.where)


def _search_part(query: str, where: str) -> _SearchPart:
    part = _SearchPart(query + ("  " + where if where else ""), "bold yellow")
    part.query, part.where = query, where
    return part


# A part whose beginning says enough to be shown cut (with …) where it does not fit whole:
# why the run stopped (`■ if grad_output[0].norm() > …`). Marked by Text.end, unused here.
CUTTABLE = "\u2063"
SHORTEST_CUT = 8  # `■ if gr…`: less says nothing
SHORTEST_QUERY = 5  # `/kin…  3/17`


def status_text(s: StatusInfo, width: int | None = None) -> Text:
    """The parts that fit in `width` cells whole, in order, two spaces apart; the stop's
    reason cut to fit rather than left out."""
    text = Text(no_wrap=True, overflow="ellipsis")
    for part in status_parts(s):
        gap = 0 if not text else 1 if text.plain.endswith(" ") else 2
        if width is not None and text.cell_len + gap + part.cell_len > width:
            room = width - text.cell_len - gap
            if isinstance(part, _SearchPart) and part.cut(room) is not None:
                part = part.cut(room)
            elif part.end != CUTTABLE or room < SHORTEST_CUT:
                continue  # left out whole; a later, shorter part may still fit
            else:
                part = part.copy()
                part.truncate(room, overflow="ellipsis")
        if gap:
            text.append(" " * gap)
        text.append_text(part)
    return text


class StatusLine(Widget):
    DEFAULT_CSS = """
    StatusLine { height: 1; background: $panel; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.info: StatusInfo | None = None
        self._line_strips = LineStrips()  # its line drawn without Textual's Content pipeline
        self._fitted: tuple[StatusInfo | None, int, Text] | None = None  # the last text fitted

    def show(self, info: StatusInfo) -> None:
        self.info = info
        self.refresh()

    def render(self) -> Text:
        # Fitted at render time: a resize re-fits it.
        return self._text(self.size.width)

    def _text(self, width: int) -> Text:
        fitted = self._fitted
        if fitted is None or fitted[0] is not self.info or fitted[1] != width:
            text = Text("") if self.info is None else status_text(self.info, width)
            fitted = self._fitted = (self.info, width, text)
        return fitted[2]

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._line_strips.forget()

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        strip = None if y or self.BLANK else self._line_strips.strip(self, self._text(width), width)
        return super().render_line(y) if strip is None else strip
