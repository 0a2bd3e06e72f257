"""The model's `input()` and `breakpoint()` while the app holds the terminal.

The app reads its keys from the terminal; a model that read the terminal too (`input()`,
`sys.stdin`, pdb through `breakpoint()`) took them: `q` went to the model's read, which
waited for an Enter the user could not know to press (issue 35). While the app is open:

- `sys.stdin` is closed to the model: reading it raises EOFError with a message that says
  why (descriptor 0 itself is /dev/null meanwhile: ui/terminal_driver.py), and the app
  says on the screen that the model tried. The model's error then shows as any other.
- `breakpoint()` does nothing but say, on the screen, where it was called: pdb would need
  the terminal the app is using, and hooktui is the debugger here (its breakpoints: `b`,
  `K`). The model goes on.

Both are put back when the app ends. What the model reads before the app opens (a
prompt at import time) reads the terminal as usual.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Iterator

from ..visible import visible

CLOSED_MESSAGE = (
    "hooktui: the model's standard input is closed while the app holds the terminal (its keys are the app's); "
    "give the model its values as arguments or environment variables"
)


class ClosedStdin(io.TextIOBase):
    """`sys.stdin` for the model while the app is open: every read is EOFError, said once."""

    def __init__(self, on_read) -> None:
        super().__init__()
        self._on_read = on_read

    @property
    def encoding(self) -> str:
        return "utf-8"

    def readable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise io.UnsupportedOperation(CLOSED_MESSAGE)

    def read(self, size: int | None = -1) -> str:
        self._refuse()

    def readline(self, size: int | None = -1) -> str:
        self._refuse()

    def _refuse(self):
        self._on_read()
        raise EOFError(CLOSED_MESSAGE)


@contextlib.contextmanager
def kept_from_the_model(app) -> Iterator[None]:
    """While the app runs: `sys.stdin` closed and `breakpoint()` skipped, each said on the
    app's screen (once each: a model reading in a loop would bury the screen)."""
    said: set[str] = set()

    def say_once(kind: str, text: str) -> None:
        if kind not in said:
            said.add(kind)
            app.notify(text, title=kind, severity="warning", timeout=10, markup=False)  # thread-safe

    def read_refused() -> None:
        say_once("stdin", "the model read its standard input (input(), sys.stdin, pdb): it got EOFError, "
                          "as the keys are the app's while it is open")

    def breakpoint_skipped(*args, **kwargs) -> None:
        caller = sys._getframe(1)
        where = visible(f"{caller.f_code.co_filename}:{caller.f_lineno}")
        # What happened first: at 80x24 a notice is one row, cut with "…" (widgets/notice.py).
        say_once("breakpoint()", f"skipped, called by the model at {where}: pdb would take "
                                 "the app's terminal (hooktui is the debugger here: b breaks at a module)")

    stdin = ClosedStdin(read_refused)
    saved_stdin, saved_hook = sys.stdin, sys.breakpointhook
    sys.stdin, sys.breakpointhook = stdin, breakpoint_skipped
    try:
        yield
    finally:
        if sys.stdin is stdin:
            sys.stdin = saved_stdin
        if sys.breakpointhook is breakpoint_skipped:
            sys.breakpointhook = saved_hook
