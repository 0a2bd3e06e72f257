"""Short notices on a narrow terminal: one line in place of the footer, for a few seconds.

Textual's toasts sit in the bottom right corner, over the panes: at 80x24 the notices of
`B`, `L`, `S` and `#` covered the Tensors pane's stats column for 5 s. While the lower panes
are tabs (below 120x32: widgets/lower.py, WIDE) the app carries the class NOTICES_IN_LINE:
its main screen's toasts are hidden (app.tcss) and each notice is said here instead
(HooktuiApp.notify): it is drawn over the footer's row (title, then the message), and over
the row above too when it needs two (a long one is cut with "…" at the end of the second),
on the toasts' layer, so nothing is laid out again (the footer keeps its place, not drawn meanwhile); the footer shows again after the
notice's timeout. Notices made together (a
step's end says "step done" and "run finished" at once) are said one after the other: a newer
one waits, the one shown keeps at most QUEUED_WAIT seconds more, and each waiting one gets
that long while others wait behind it (the last, its own time). Textual's own notification list is kept as it is (a notice still is one).
Side by side, the toasts stay: they have room beside the data there.

A screen open over the main one (help, the console, the watch or breakpoints screen, the
overview) gets a line of its own at its first notice (say_in_line), on the toasts' layer:
the terminal's last row says the notice over what the screen shows there (a border's key
hints, the main footer dimmed), never a toast over the screen's own content (the console's
results, the help text). The main screen's line is told too, so a notice outlives the
screen that was open when it came, for the rest of its time.
"""

from __future__ import annotations

import time
from collections import deque
from typing import TYPE_CHECKING, NamedTuple

from rich.text import Text
from textual.timer import Timer
from textual.widgets import Footer, Static

from ...visible import visible

if TYPE_CHECKING:
    from textual.app import App

NOTICES_IN_LINE = "-notices-in-line"  # the app's class while notices take the footer's row
DEFAULT_TIMEOUT = 5.0  # seconds, as Textual's toasts
QUEUED_WAIT = 2.0  # seconds a notice keeps the row while a newer one waits
WAITING_MAX = 8  # notices kept waiting (the oldest waiting one goes first)


class _Notice(NamedTuple):
    message: str
    title: str
    severity: str
    timeout: float
    markup: bool


class NoticeLine(Static):
    DEFAULT_CSS = """
    NoticeLine {
        dock: bottom; width: 100%; height: auto; max-height: 2; display: none; padding: 0 1;
        background: $primary-muted; color: $text;
        text-wrap: nowrap; text-overflow: ellipsis;
    }
    NoticeLine.-warning { background: $warning-muted; }
    NoticeLine.-error { background: $error-muted; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__("", markup=False, **kwargs)
        self._timer: Timer | None = None
        self._ends_at = 0.0  # time.monotonic() when the notice shown gives the row up
        self._waiting: deque[_Notice] = deque()
        self.text = ""  # the notice shown ("" when none): title and message, as plain text

    def on_mount(self) -> None:
        # Over the screen's last rows, not rows taken from its layout (docks take room in
        # their own layer only): the footer stays where it is, under the notice, and
        # nothing is laid out again when a notice comes or goes.
        layers = self.screen.layers
        self.styles.layer = "_toastrack" if "_toastrack" in layers else layers[-1]

    def say(self, message: str, *, title: str = "", severity: str = "information", timeout: float | None = None,
            markup: bool = True) -> None:
        notice = _Notice(message, title, severity, DEFAULT_TIMEOUT if timeout is None else timeout, markup)
        if not self.text:
            self._show(notice)
            return
        if len(self._waiting) == WAITING_MAX:
            self._waiting.popleft()
        self._waiting.append(notice)
        left = self._ends_at - time.monotonic()
        if left > QUEUED_WAIT:
            self._restart_timer(QUEUED_WAIT)

    def _show(self, notice: _Notice) -> None:
        message, title = notice.message, notice.title
        body = Text.from_markup(message) if notice.markup else Text(visible(message))
        text = Text.assemble((visible(title) + ": ", "bold"), body) if title else body
        text = Text(" ".join(text.plain.splitlines()), spans=text.spans) if "\n" in text.plain else text
        self.text = text.plain
        self.update(self._two_rows(text))
        self.set_class(notice.severity == "warning", "-warning")
        self.set_class(notice.severity == "error", "-error")
        self._footer(False)
        self._restart_timer(min(notice.timeout, QUEUED_WAIT) if self._waiting else notice.timeout)

    def _two_rows(self, text: Text) -> Text:
        """At most two rows of the screen's width: a path or a call site in a long notice
        (`S`'s "hooktui view PATH", a debug step's end) is read whole where it fits in two,
        wrapped at spaces, else cut anywhere (a path longer than a row has no space to wrap
        at); beyond two rows, cut with "…" (the palette's Notices keeps the whole text)."""
        width = max(self.screen.size.width - 2, 8)  # less the padding
        rows = list(text.wrap(self.app.console, width))
        if len(rows) > 2:
            rows = list(text.divide(range(width, len(text), width)))
        if len(rows) > 2:
            rows = rows[:2]
            rows[1].truncate(width - 1)
            rows[1].append("…")
        if len(rows) == 1:
            return text
        for row in rows:
            row.rstrip()  # in place: a wrapped row's trailing space
        return Text("\n").join(rows)

    def _restart_timer(self, seconds: float) -> None:
        if self._timer is not None:
            self._timer.stop()
        self._ends_at = time.monotonic() + seconds
        self._timer = self.set_timer(seconds, self._next)

    def _next(self) -> None:
        if self._waiting:
            self._show(self._waiting.popleft())
        else:
            self.clear()

    def clear(self) -> None:
        """No notice, none waiting: the footer back."""
        self._waiting.clear()
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self.text = ""
        self._footer(True)

    def _footer(self, shown: bool) -> None:
        self.display = not shown
        # Over the footer, which keeps its place in the layout (nothing is laid out again)
        # but is not drawn meanwhile: its keys would cut the notice's row into pieces.
        for footer in self.screen.query(Footer):
            footer.visible = shown


async def say_in_line(app: App, message: str, *, title: str, severity: str, timeout: float | None, markup: bool) -> None:
    """A notice said on the last row: the main screen's line, and the line of the screen on
    top of it, made there at its first notice."""
    main, top = app.screen_stack[0], app.screen
    lines = list(main.query(NoticeLine))
    if top is not main:
        found = list(top.query(NoticeLine))
        if not found:
            line = NoticeLine(classes="-on-top")
            await top.mount(line)
            found = [line]
        lines += found
    for line in lines:
        line.say(message, title=title, severity=severity, timeout=timeout, markup=markup)
