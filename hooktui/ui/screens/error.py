"""The model raised: its exception, where, and the traceback of the user's code."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ...engine.records.records import Event
from ..paths import short_traceback, user_traceback
from ..widgets.timeline import module_label


class ErrorScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    ErrorScreen { align: center middle; }
    ErrorScreen > Vertical {
        width: 100; max-width: 100%; height: auto; max-height: 100%;
        border: thick $error; background: $surface; padding: 0 1;
    }
    ErrorScreen #error-head { height: auto; }
    ErrorScreen VerticalScroll { height: auto; max-height: 1fr; margin-top: 1; }
    ErrorScreen #error-help { height: 1; color: $text-muted; margin-top: 1; }
    """

    BINDINGS = [
        Binding("escape,enter", "dismiss", "Close", id="hooktui.error.close"),
        Binding("f", "full", "Full traceback", id="hooktui.error.full"),
        Binding("q", "app.quit", "Quit", id="hooktui.error.quit"),
    ]

    def __init__(self, event: Event, last: Event | None) -> None:
        super().__init__()
        self.event = event
        self.last = last
        self.full = False

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "the model raised"
            yield Static(self._head(), id="error-head")
            with VerticalScroll():
                yield Static(self._traceback(), id="error-traceback")
            yield Static("escape: back to the debugger (history stays)  f: full traceback  q: quit", id="error-help")

    def _head(self) -> Text:
        event, error = self.event, self.event.error
        text = Text()
        if error is not None:
            text.append(f"{error.type}: ", "bold red")
            text.append(error.message, "bold")
        where = f"during {event.phase}"
        if event.phase == "forward" and (event.module or event.module_type):
            where += f", in module {module_label(event.module)} ({event.module_type})"
        text.append(f"\n{where}", "")
        for advice in event.notes[1:]:  # after the error itself: what to do (engine/run/device_errors.py)
            text.append(f"\n{advice}", "bold yellow")
        if self.last is not None:
            text.append(f"\nlast firing before it: #{self.last.number} {self.last.hook} of {module_label(self.last.module)}", "dim")
        return text

    def _traceback(self) -> Text:
        error = self.event.error
        if error is None:
            return Text("no traceback recorded")
        if self.full:
            return Text(short_traceback(error.traceback))
        body, skipped = user_traceback(error.traceback)
        text = Text(body)
        if skipped:
            text.append(f"\n({skipped} frames in torch, hooktui and the standard library left out: f shows them)", "dim")
        return text

    def action_full(self) -> None:
        self.full = not self.full
        self.query_one("#error-traceback", Static).update(self._traceback())

    def action_dismiss(self) -> None:
        self.dismiss(None)
