"""A small centred modal: a title, a line of context and one input; enter answers with what
the input holds (turned into the screen's result by `answer`), escape with None. The go-to
(`#`) and save (`S`) screens are this with their own words."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class OneLineScreen(ModalScreen[Any]):
    DEFAULT_CSS = """
    OneLineScreen { align: center middle; }
    OneLineScreen > Vertical {
        width: 40; max-width: 100%; height: auto;
        border: round $primary; background: $surface; padding: 0 1;
    }
    OneLineScreen .one-line-context { color: $text-muted; }
    OneLineScreen Input, OneLineScreen Input:focus { border: none; height: 1; padding: 0 1; }
    """

    BINDINGS = [Binding("escape", "dismiss", "Close", id="hooktui.one_line.close")]

    def __init__(self, *, title: str, subtitle: str, context: str, input: Input, width: int = 40) -> None:
        super().__init__()
        # Names of their own: a Screen has attributes such as _context already.
        self._box_title, self._box_subtitle, self._line, self._input, self._box_width = title, subtitle, context, input, width

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = self._box_title
            box.border_subtitle = self._box_subtitle
            box.styles.width = self._box_width
            yield Static(self._line, classes="one-line-context", markup=False)
            yield self._input

    def on_mount(self) -> None:
        self._input.focus()

    def answer(self, text: str) -> Any:
        return text

    def on_input_submitted(self, message: Input.Submitted) -> None:
        self.dismiss(self.answer(message.value))

    def action_dismiss(self) -> None:
        self.dismiss(None)
