"""The `/` search box: one line to type a query in, and one under it for what was wrong
with it. Enter hands the query to the app (which moves to the next match, or says why it
cannot read it here); escape clears the search."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Input, Static

PLACEHOLDER = "module  kind:KIND  tensor:NAME  nan  inf  phase:bwd"


class SearchInput(Input):
    # One row: Input's own `:focus` border would leave no room for the text (FilterInput).
    DEFAULT_CSS = """
    SearchInput, SearchInput:focus { height: 1; border: none; padding: 0 1 0 0; width: 1fr; }
    SearchInput:focus { background: $boost; }
    """

    BINDINGS = [Binding("escape", "app.clear_search", "Clear search", id="hooktui.search.clear")]


class SearchBar(Vertical):
    DEFAULT_CSS = """
    SearchBar { display: none; height: auto; }
    SearchBar.-open { display: block; }
    SearchBar > Horizontal { height: 1; }
    SearchBar #search-slash { width: 2; padding-left: 1; text-style: bold; }
    SearchBar #search-error { display: none; height: 1; padding: 0 1; color: $text-error; text-wrap: nowrap; text-overflow: ellipsis; }
    SearchBar.-error #search-error { display: block; }
    """

    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Static("/", id="search-slash")
            yield SearchInput(placeholder=PLACEHOLDER, id="search-input")
        yield Static("", id="search-error", markup=False)

    @property
    def input(self) -> SearchInput:
        return self.query_one(SearchInput)

    def open(self, text: str = "") -> None:
        self.say("")
        self.input.value = text
        self.add_class("-open")
        self.input.focus()

    def close(self) -> None:
        self.say("")
        self.remove_class("-open")

    def say(self, problem: str) -> None:
        """A one-line message under the query (what could not be read); "" hides it."""
        self.query_one("#search-error", Static).update(Text(problem, no_wrap=True, overflow="ellipsis"))
        self.set_class(bool(problem), "-error")

    def on_input_submitted(self, message: Input.Submitted) -> None:
        message.stop()
        self.post_message(self.Submitted(message.value))
