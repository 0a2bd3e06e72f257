"""Go to firing #N (`#`): the number Explain, `trace`, `diff` and the guard all cite.

A small modal with one integer input; the app does the moving (NavigationActions.go_to_index)
and says why when it cannot (not fired yet, a hidden legacy firing)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class GotoScreen(ModalScreen[int | None]):
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

    def __init__(self, latest: int | None) -> None:
        super().__init__()
        self._latest = latest

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "go to firing #"
            box.border_subtitle = "enter goes · escape closes"
            known = "no firing yet" if self._latest is None else f"fired so far: #0 to #{self._latest}"
            yield Static(known, id="goto-range", markup=False)
            yield Input(placeholder="N", type="integer", id="goto-input")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, message: Input.Submitted) -> None:
        text = message.value.strip().lstrip("#")
        self.dismiss(int(text) if text.isdigit() else None)

    def action_dismiss(self) -> None:
        self.dismiss(None)
