"""The Breakpoints screen (`K`): every breakpoint with its hit count; space enables or
disables the selected one, d deletes it, and the input line adds one from a short spec
(engine/analysis/breakpoints.py: `nan`, `norm > 1e3 in layers.* backward`, `if EXPR`, ...)."""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Static

from ...engine.analysis.breakpoints import SPEC_HELP, BreakpointList, BreakpointState, parse_breakpoint

COLUMNS = ("on", "breakpoint", "kind", "hits")


class BreakpointsScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    BreakpointsScreen { align: center middle; }
    BreakpointsScreen > Vertical {
        width: 100; max-width: 100%; height: auto; max-height: 100%;
        border: round $primary; background: $surface; padding: 0 1;
    }
    BreakpointsScreen DataTable { height: auto; max-height: 20; }
    BreakpointsScreen #bp-message { color: $text-muted; }
    BreakpointsScreen Input, BreakpointsScreen Input:focus { border: none; height: 1; padding: 0 1; }
    """

    BINDINGS = [
        Binding("escape", "dismiss", "Close", id="hooktui.breakpoints.close"),
        Binding("space", "toggle_enabled", "Enable/disable", id="hooktui.breakpoints.enable"),
        Binding("d,delete", "delete", "Delete", id="hooktui.breakpoints.delete"),
        Binding("a", "add", "Add", id="hooktui.breakpoints.add"),
    ]

    def __init__(self, breakpoints: BreakpointList, live: bool, at_backward: bool = False) -> None:
        super().__init__()
        self._list = breakpoints
        self._live = live
        self._at_backward = at_backward  # B's break, a switch of its own (not in the list)
        self._states: list[BreakpointState] = []

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "breakpoints"
            box.border_subtitle = "space: on/off · d: delete · a: add · escape closes"
            yield DataTable(cursor_type="row", zebra_stripes=True, id="bp-table")
            hits = "hits: firings it matched so far" if self._live else "hits: not counted in a recorded trace"
            also = "Also on: a break when backward starts (B turns it off). " if self._at_backward else ""
            yield Static(Text(f"{also}{hits}. Add: {SPEC_HELP}"), id="bp-message")
            yield Input(placeholder="add: e.g. nan  |  norm > 1e3 in layers.* backward  |  if output.abs().max() > 10", id="bp-input",
                        select_on_focus=False)  # a first key typed on the table stays (on_key)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns(*COLUMNS)
        self._fill()
        table.focus()  # so that `a` adds, as the help says, even when there are none yet

    def on_key(self, event: events.Key) -> None:
        """A spec typed straight away (`nan`, `norm > 1e3`, `if ...`) goes to the input: any
        printable key that is not one of the table's own (a, d, space) starts it.

        Keys typed fast or pasted arrive in one burst, and the app hands each to the widget
        that has focus *when it reads it*: the rest of a burst that opened the input is still
        queued at the table, and reaches here with the input focused (the input takes its own
        printable keys, so those never get here). They are the input's, space, `a` and `d`
        included (`module enc backward` became 'mouleencbckwr')."""
        if not event.is_printable:
            return
        # `focused`, not `has_focus`: that one follows the Focus message, later than set_focus.
        if self.focused is self.query_one(Input) or (
            self.focused is self.query_one(DataTable) and event.character not in ("a", "d", " ")
        ):
            self._to_input().insert_text_at_cursor(event.character)
            event.stop()
            event.prevent_default()

    def on_paste(self, event: events.Paste) -> None:
        """A spec pasted while the table has focus (a terminal's bracketed paste) is the
        input's, whole: none of its characters acts as a key of the table."""
        if self.focused is not self.query_one(Input):
            self._to_input().insert_text_at_cursor(event.text.replace("\n", " ").strip())
            event.stop()

    def _to_input(self) -> Input:
        """Focus the input at once (`Widget.focus()` waits for the message queue)."""
        box = self.query_one(Input)
        self.set_focus(box)
        return box

    def _fill(self) -> None:
        table = self.query_one(DataTable)
        row = table.cursor_row
        table.clear()
        self._states = self._list.states()
        for state in self._states:
            bp = state.breakpoint
            table.add_row(
                Text("●", "bold red") if state.enabled else Text("○", "dim"),
                Text(bp.label),  # Text: a condition's text is never markup
                bp.kind,
                str(state.hits) if self._live else "-",
            )
        if self._states:
            table.move_cursor(row=min(row, len(self._states) - 1), animate=False)

    def _selected(self) -> BreakpointState | None:
        table = self.query_one(DataTable)
        if not self._states or self.focused is not table:
            return None
        return self._states[table.cursor_row]

    def action_toggle_enabled(self) -> None:
        state = self._selected()
        if state is not None:
            self._list.set_enabled(state.breakpoint, not state.enabled)
            self._fill()

    def action_delete(self) -> None:
        state = self._selected()
        if state is not None:
            self._list.remove(state.breakpoint)
            self._fill()

    def action_add(self) -> None:
        self._to_input()

    def on_input_submitted(self, message: Input.Submitted) -> None:
        text = message.value.strip()
        if not text:
            return
        note = self.query_one("#bp-message", Static)
        try:
            bp = parse_breakpoint(text)
        except ValueError as exc:
            note.update(Text(str(exc), "bold red"))
            return
        self._list.add(bp)
        message.input.value = ""
        note.update(Text(f"added: {bp.label}"))
        self._fill()
        self.set_focus(self.query_one(DataTable))  # at once: see _to_input

    def action_dismiss(self) -> None:
        self.dismiss(None)
