"""The console (`:`): Python expressions evaluated at the firing on screen (engine/analysis/console.py).

Results stack up above the input line: what the line printed, then a tensor as the Tensors
pane's one-line summary, anything else as its repr, an error as one red line. ↑/↓ in the input browse what was
typed before (kept for the app's lifetime); tab moves to the results, where enter shows a
tensor result's values grid. Escape closes.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, ListItem, ListView, Static

from ...engine.analysis.console import ConsoleResult
from ...visible import visible, visible_block
from ..widgets.values import ValuesPane


def result_text(result: ConsoleResult) -> Text:
    text = Text()
    # A repr can carry a trace file's text: control characters made visible, never markup.
    text.append(f"> {visible(result.expression)}", "bold")
    if result.output:  # what it printed, line by line, before its value
        text.append("\n" + visible_block(result.output.rstrip("\n")))
    if result.text:
        text.append("\n")
        text.append(visible(result.text), "" if result.ok else "bold red")
    if result.tensor is not None:
        text.append("  (enter: values)", "dim")
    return text


class ConsoleScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    ConsoleScreen { align: center bottom; }
    ConsoleScreen > Vertical {
        width: 100%; height: auto; max-height: 80%;
        border: round $primary; background: $surface; padding: 0 1;
    }
    ConsoleScreen ListView { height: auto; max-height: 12; }
    ConsoleScreen ValuesPane { height: 10; display: none; }
    ConsoleScreen ValuesPane.-shown { display: block; }
    ConsoleScreen #console-where { color: $text-muted; }
    ConsoleScreen Input, ConsoleScreen Input:focus { border: none; height: 1; padding: 0 1; }
    """

    BINDINGS = [
        Binding("escape", "dismiss", "Close", id="hooktui.console.close"),
        Binding("up", "history(-1)", "Earlier", show=False, id="hooktui.console.earlier"),
        Binding("down", "history(1)", "Later", show=False, id="hooktui.console.later"),
    ]

    def __init__(self, where: str, evaluate: Callable[[str], ConsoleResult], history: list[str], results: list[ConsoleResult]) -> None:
        super().__init__()
        self._where = where
        self._evaluate = evaluate
        self._history = history  # the app's: shared between openings
        self._results = results
        self._browse = len(history)

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "console"
            box.border_subtitle = "enter: evaluate · ↑↓ history · tab: results · escape closes"
            yield Static(Text(self._where), id="console-where")
            yield ListView(*(ListItem(Static(result_text(r))) for r in self._results), id="console-results")
            yield ValuesPane(id="console-values")
            yield Input(placeholder="a Python expression, e.g. grad_output[0].abs().max()", id="console-input")

    def on_mount(self) -> None:
        self.query_one(Input).focus()
        results = self.query_one(ListView)
        if self._results:
            results.index = len(self._results) - 1
            results.scroll_end(animate=False)

    def on_input_submitted(self, message: Input.Submitted) -> None:
        expression = message.value.strip()
        if not expression:
            return
        if not self._history or self._history[-1] != expression:
            self._history.append(expression)
        self._browse = len(self._history)
        result = self._evaluate(expression)
        self._results.append(result)
        results = self.query_one(ListView)
        results.append(ListItem(Static(result_text(result))))
        results.index = len(self._results) - 1
        results.scroll_end(animate=False)
        message.input.value = ""
        self._show_values(result if result.tensor is not None else None)

    def on_list_view_selected(self, message: ListView.Selected) -> None:
        index = message.list_view.index
        if index is not None and 0 <= index < len(self._results):
            self._show_values(self._results[index] if self._results[index].tensor is not None else None)

    def _show_values(self, result: ConsoleResult | None) -> None:
        pane = self.query_one(ValuesPane)
        pane.set_class(result is not None, "-shown")
        if result is not None:
            pane.show(result.tensor)

    def action_history(self, delta: int) -> None:
        field = self.query_one(Input)
        if not field.has_focus or not self._history:
            return
        self._browse = max(0, min(len(self._history), self._browse + delta))
        field.value = self._history[self._browse] if self._browse < len(self._history) else ""
        field.cursor_position = len(field.value)

    def action_dismiss(self) -> None:
        self.dismiss(None)
