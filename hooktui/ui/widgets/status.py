"""The status line: state, phase, where in the firings, module and hook, the loss."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.widgets import Static

from ...engine.records import Event
from .timeline import module_label

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


def status_text(s: StatusInfo) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(f" {s.state} ", STATE_STYLE.get(s.state, "bold"))
    event = s.event
    if event is not None:
        text.append(f" {event.phase} ", "bold")
        text.append(f"#{event.index}", "bold")
        text.append(f" firing {s.position + 1} of {s.total}{' so far' if s.more_coming else ''}")
        if s.position < s.total - 1:
            text.append(" (history)", "bold yellow")
        text.append("  ")
        text.append(module_label(event.module), "bold")
        if event.module_type:
            text.append(f" {event.module_type}", "dim")
        text.append(f" {event.hook}", "italic")
    elif s.total == 0:
        text.append(" waiting for the first firing")
    if s.summary:
        text.append("  " + s.summary, "green")
    marks = []
    if len(s.breakpoints) in (1, 2):
        marks.append("● " + ", ".join(module_label(m) for m in s.breakpoints))
    elif s.breakpoints:
        marks.append(f"● {len(s.breakpoints)} breakpoints")
    if s.break_on_backward:
        marks.append("● at backward")
    if marks:
        text.append("  " + " ".join(marks), "red")
    text.append(f"  loss: {s.loss}", "dim")
    return text


class StatusLine(Static):
    DEFAULT_CSS = """
    StatusLine { height: 1; background: $panel; }
    """

    def show(self, info: StatusInfo) -> None:
        self.update(status_text(info))
