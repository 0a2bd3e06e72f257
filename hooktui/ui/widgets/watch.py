"""The Watch pane: the user's watch expressions and their values at the firing on screen
(engine/analysis/watch.py evaluates them; the app hands the values over).

A tab of the lower panes, there from the first `W` on (so that a session that never
watches keeps its five tabs). One row a watch, one line each: the expression, then its
value, the exception's one line (red) or why it has no value here (dim). A line above says
what the watches can see at this firing. `d` (or delete) removes the watch under the cursor.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Static

from ...engine.analysis.watch import ABSENT, ERROR, WatchValue
from ...visible import visible
from .text_update import set_text

EXPRESSION_WIDTH = 32  # at most; the value takes the rest of the row
NO_WATCHES = "no watches yet: W adds one (grad_output[0].norm(), module.weight.abs().max(), output.mean(), ...)"


class WatchPane(Vertical):
    DEFAULT_CSS = """
    WatchPane { height: 1fr; }
    WatchPane > #watch-note { height: auto; color: $text-muted; padding: 0 1; }
    WatchPane > DataTable { height: 1fr; }
    """

    BINDINGS = [Binding("d,delete", "remove", "Remove watch", id="hooktui.watch.remove")]

    class Removed(Message):
        """The user removed the watch at `position`."""

        def __init__(self, position: int) -> None:
            super().__init__()
            self.position = position

    def __init__(self, values: Sequence[WatchValue] = (), note: str = "", **kwargs) -> None:
        super().__init__(**kwargs)
        self._values = list(values)
        self._note = note
        self._stale = False  # held (`hold`) and not drawn yet

    def compose(self) -> ComposeResult:
        yield Static(id="watch-note", markup=False)
        table: DataTable = DataTable(cursor_type="row", id="watch-table")
        yield table

    def on_mount(self) -> None:
        self.show(self._values, self._note)

    def hold(self, values: Sequence[WatchValue], note: str) -> None:
        """Take the values without drawing them: the pane is behind another tab.
        `up_to_date` draws them when shown or read."""
        self._values, self._note = list(values), note
        self._stale = True

    def up_to_date(self) -> WatchPane:
        """This pane, its table drawn for the values it was last given."""
        if self._stale and self.is_mounted:
            self.show(self._values, self._note)
        return self

    def on_show(self) -> None:
        self.up_to_date()

    def show(self, values: Sequence[WatchValue], note: str) -> None:
        self._values, self._note = list(values), note
        if not self.is_mounted:
            return
        self._stale = False
        set_text(self.query_one("#watch-note", Static), Text(visible(note if values else NO_WATCHES)))
        table = self.query_one(DataTable)
        row = table.cursor_row
        table.clear(columns=True)
        # The expression takes at most 2/5 of the row, the value the rest: one line each, cut with "…".
        room = max(20, (self.size.width or 80) - 5)  # the cells' padding and the scrollbar
        width = max(5, min(EXPRESSION_WIDTH, room * 2 // 5, max((len(visible(v.expression)) for v in values), default=5)))
        table.add_column("watch", width=width, key="watch")
        table.add_column("value", width=max(10, room - width), key="value")
        for value in values:
            table.add_row(Text(_cut(visible(value.expression), width), style="bold"), value_text(value, room - width))
        if values:
            table.move_cursor(row=min(max(row, 0), len(values) - 1), animate=False)

    def on_resize(self) -> None:
        self.show(self._values, self._note)

    @property
    def values(self) -> list[WatchValue]:
        return list(self._values)

    def action_remove(self) -> None:
        table = self.query_one(DataTable)
        if self._values and 0 <= table.cursor_row < len(self._values):
            self.post_message(self.Removed(table.cursor_row))


def value_text(value: WatchValue, width: int) -> Text:
    """A watch's value as shown: one line of `width` at most, control characters made
    visible, never markup."""
    style = "red" if value.kind == ERROR else "dim italic" if value.kind == ABSENT else ""
    return Text(_cut(visible(value.text), max(2, width)), style=style)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
