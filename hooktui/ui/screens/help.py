"""The help screen: every key of the app, generated from its bindings."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

EXTRA = [
    ("tab, shift+tab", "move between panes"),
    ("arrows, pgup, pgdn", "move in the focused pane (timeline: show that firing)"),
    ("enter", "fold or unfold a module (tree)"),
    ("ctrl+p", "command palette: every action by name"),
]


def keys_table(bindings: list[tuple[str, str, str]]) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for keys, description, _ in bindings:
        table.add_row(Text(keys), Text(description))
    for keys, description in EXTRA:
        table.add_row(keys, Text(description, style="dim"))
    return table


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 76; max-width: 100%; height: auto; max-height: 100%;
        border: round $primary; background: $surface; padding: 0 1;
    }
    """

    BINDINGS = [
        Binding("escape,q,question_mark,f1", "dismiss", "Close", id="hooktui.help.close"),
    ]

    def __init__(self, bindings: list[tuple[str, str, str]]) -> None:
        super().__init__()
        self._keys = bindings

    def compose(self) -> ComposeResult:
        with VerticalScroll() as scroll:
            scroll.border_title = "hooktui keys"
            scroll.border_subtitle = "escape closes"
            yield Static(keys_table(self._keys))

    def action_dismiss(self) -> None:
        self.dismiss(None)
