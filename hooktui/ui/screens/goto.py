"""Go to firing #N (`#`): the number Explain, `trace`, `diff` and the guard all cite.

A small modal with one input, a number as every view prints it ("39", or "39.1" for a firing
stepped into with `s`: engine/records.py, Event.sub); the app does the moving
(NavigationActions.go_to_index) and says why when it cannot (not fired yet, a hidden legacy
firing)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from ...engine.records import parse_firing_number


class GotoScreen(ModalScreen[tuple[int, int] | None]):
    DEFAULT_CSS = """
    GotoScreen { align: center middle; }
    GotoScreen > Vertical {
        width: 40; max-width: 100%; height: auto;
        border: round $primary; background: $surface; padding: 0 1;
    }
    GotoScreen #goto-range { color: $text-muted; }
    GotoScreen Input, GotoScreen Input:focus { border: none; height: 1; padding: 0 1; }
    """

    BINDINGS = [Binding("escape", "dismiss", "Close", id="hooktui.goto.close")]

    def __init__(self, latest: str | None) -> None:
        super().__init__()
        self._latest = latest

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "go to firing #"
            box.border_subtitle = "enter goes · escape closes"
            known = "no firing yet" if self._latest is None else f"fired so far: #0 to #{self._latest}"
            yield Static(known, id="goto-range", markup=False)
            yield Input(placeholder="N or N.k", restrict=r"#?[0-9]*\.?[0-9]*", id="goto-input")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, message: Input.Submitted) -> None:
        self.dismiss(parse_firing_number(message.value))

    def action_dismiss(self) -> None:
        self.dismiss(None)
