"""Save the firings so far to a trace file (`S`), for `hooktui view` and `hooktui diff`.

A small modal with one input, prefilled with a file name not used yet; the app writes the
file (engine/trace_file.py: atomically, with the source lines around every call site)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class SaveScreen(ModalScreen[str | None]):
    DEFAULT_CSS = """
    SaveScreen { align: center middle; }
    SaveScreen > Vertical {
        width: 70; max-width: 100%; height: auto;
        border: round $primary; background: $surface; padding: 0 1;
    }
    SaveScreen #save-what { color: $text-muted; }
    SaveScreen Input, SaveScreen Input:focus { border: none; height: 1; padding: 0 1; }
    """

    BINDINGS = [Binding("escape", "dismiss", "Close", id="hooktui.save.close")]

    def __init__(self, default: str, count: int) -> None:
        super().__init__()
        self._default = default
        self._count = count

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "save the firings so far"
            box.border_subtitle = "enter saves · escape closes"
            yield Static(f"{self._count} firings, to a trace file for hooktui view / hooktui diff", id="save-what", markup=False)
            yield Input(value=self._default, id="save-input", select_on_focus=False)

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, message: Input.Submitted) -> None:
        self.dismiss(message.value.strip() or None)

    def action_dismiss(self) -> None:
        self.dismiss(None)
