"""The last notices, whole (the command palette's "Notices"): a notice said on one or two
rows at 80x24 is cut there, and a toast goes after a few seconds; here each is read in
full, newest first, until escape."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ...visible import visible

KEPT = 50  # notices the app keeps for this screen


class SaidNotice(NamedTuple):
    at: str  # "HH:MM:SS", the wall clock when it was said
    title: str
    message: str  # as plain text (a markup notice's markup read)
    severity: str


SEVERITY_STYLE = {"warning": "bold yellow", "error": "bold red"}


class NoticesScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    NoticesScreen { align: center middle; }
    NoticesScreen > Vertical {
        width: 100; max-width: 100%; height: auto; max-height: 100%;
        border: round $primary; background: $surface; padding: 0 1;
    }
    NoticesScreen VerticalScroll { height: auto; max-height: 1fr; }
    NoticesScreen #notices-help { height: 1; color: $text-muted; }
    """

    BINDINGS = [Binding("escape,enter,q", "dismiss", "Close", id="hooktui.notices.close")]

    def __init__(self, notices: Sequence[SaidNotice]) -> None:
        super().__init__()
        self.notices = list(reversed(notices))  # newest first

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "notices, newest first"
            with VerticalScroll():
                yield Static(self._text(), id="notices-text")
            yield Static("escape: back", id="notices-help")

    def _text(self) -> Text:
        if not self.notices:
            return Text("no notice yet", style="italic")
        text = Text()
        for k, notice in enumerate(self.notices):
            if k:
                text.append("\n")
            text.append(f"{notice.at} ", "dim")
            if notice.title:
                text.append(visible(notice.title) + ": ", SEVERITY_STYLE.get(notice.severity, "bold"))
            text.append(visible(notice.message))
        return text
