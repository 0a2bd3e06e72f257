"""The timeline's filter box: module name substring or glob; escape clears it."""

from __future__ import annotations

from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input


class FilterInput(Input):
    # Input's own `:focus` rule draws a tall border; in one row that border would leave no
    # room for the text being typed, so it is overridden for the focused state too.
    DEFAULT_CSS = """
    FilterInput, FilterInput:focus { display: none; height: 1; border: none; padding: 0 1; }
    FilterInput.-open { display: block; }
    FilterInput:focus { background: $boost; }
    """

    BINDINGS = [Binding("escape", "clear_filter", "Clear filter", id="hooktui.filter.clear")]

    class Closed(Message):
        """The filter box gave focus back (escape or enter)."""

    def open(self) -> None:
        self.add_class("-open")
        self.focus()

    def action_clear_filter(self) -> None:
        self.value = ""
        self.remove_class("-open")
        self.post_message(self.Closed())

    async def action_submit(self) -> None:
        await super().action_submit()
        if not self.value:
            self.remove_class("-open")
        self.post_message(self.Closed())
