"""The overview screen (`w`): the gradient flow of every module call at once.

A full screen rather than a pane, so that 80x24 still shows 18 calls with their bars. The
app's keys keep working here (`n`, `c`, `N`, ...): the app calls `sync` whenever it draws
the current firing, so the rows grow and fill in live while a run streams (at the app's
pane rate, RUNNING_PANES). Enter shows the selected call's first firing, `j` its first
backward firing, on the main screen.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static

from ...engine.records.records import Event
from ..widgets.overview import LOG_HIGH, LOG_LOW, OverviewRows
from ..widgets.status import StatusInfo, StatusLine

# Two lines that fit 80 columns each.
LEGEND = (
    f"bars on a log scale, 1e{LOG_LOW} … 1e{LOG_HIGH}  ·  output: █ std, ░ abs-max (the number)\n"
    "∇: L2 norm of the gradient  ·  NaN! Inf! ▚: non-finite  ·  ▶ current call"
)
KEYS = "w/esc: back  enter: its first firing  j: its backward  ↑↓: select  n c: step"


class OverviewScreen(Screen[None]):
    DEFAULT_CSS = """
    OverviewScreen > #overview-legend { height: auto; max-height: 2; color: $text-muted; padding: 0 1; }
    OverviewScreen > OverviewRows { height: 1fr; }
    OverviewScreen > #overview-keys { height: 1; background: $panel; color: $text-muted; padding: 0 1; }
    """

    BINDINGS = [
        Binding("escape", "close", "Back", id="hooktui.overview.close"),
        Binding("enter", "open_call", "Its first firing", id="hooktui.overview.open"),
        Binding("j", "open_call(True)", "Its backward", id="hooktui.overview.backward"),
    ]

    def __init__(self, events: Sequence[Event], marks: Mapping[int, str] | None = None) -> None:
        super().__init__()
        self._events = events
        self._marks = marks

    def compose(self) -> ComposeResult:
        yield StatusLine(id="overview-status")
        yield Static(Text(LEGEND), id="overview-legend")
        yield OverviewRows(self._events, marks=self._marks, id="overview")
        yield Static(Text(KEYS, no_wrap=True, overflow="ellipsis"), id="overview-keys")

    def on_mount(self) -> None:
        self.query_one(OverviewRows).focus()

    @property
    def rows(self) -> OverviewRows:
        return self.query_one(OverviewRows)

    def sync(self, current: Event | None, status: StatusInfo) -> None:
        """New firings and the current one (the app calls this when it draws)."""
        if not self.is_mounted:
            return
        rows = self.rows
        rows.grow()
        rows.show_current(current)
        self.query_one(StatusLine).show(status)

    def on_overview_rows_chosen(self, message: OverviewRows.Chosen) -> None:
        self._open(message.row.first)

    def action_open_call(self, backward: bool = False) -> None:
        row = self.rows.selected_row
        if row is None:
            return
        if backward and row.backward_first is None:
            self.notify("no backward firing of this call (yet)", title="overview", markup=False)
            return
        self._open(row.backward_first if backward else row.first)

    def _open(self, position: int | None) -> None:
        if position is None:
            return
        self.dismiss(None)
        self.app.goto(position, follow=False)

    def action_close(self) -> None:
        self.dismiss(None)
