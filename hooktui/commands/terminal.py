"""The app needs a terminal: without one (a cron job, `setsid ... </dev/null >log`, a pipe)
Textual would write escape codes into the log and wait forever for keys that never come."""

from __future__ import annotations

import os
import sys

from ..errors import UserError


def require_terminal(instead: str) -> None:
    """Refuse at once, pointing to `instead`, unless stdin and stdout are a terminal or a
    Textual driver of its own is set (textual-serve's web driver, under `hooktui serve`)."""
    if os.environ.get("TEXTUAL_DRIVER"):
        return
    if _is_terminal(sys.stdin) and _is_terminal(sys.stdout):
        return
    raise UserError(f"the debugger needs a terminal (standard input and output are not one here): {instead}")


def _is_terminal(stream) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (OSError, ValueError):  # closed
        return False
