"""How hooktui's library (`hooktui.debug`, `hooktui.guard`, `hooktui.record`) speaks to the
person running the program, without print: two kinds of message, each through the standard
channel made for it, so that a program can filter, route or silence them.

- Something the user may want to fix (a trace file that could not be written; hooktui's own
  failure, after which a guard went on unchecked): a warning of category `HooktuiWarning`
  (`warnings.warn`), which `warnings.filterwarnings("ignore", category=hooktui.HooktuiWarning)`
  silences. Python shows a given warning once per place by default. A filter that turns it
  into an error (`-W error`) does not make it one: raised inside a hook it would change the
  run, so it is logged at ERROR instead.
- Information (where a step's trace was saved and how to open it; that the app waits for the
  step): a record of the `hooktui` logger at level INFO.

So that nothing the README promises disappears, the `hooktui` logger has a handler of its own
that prints `hooktui: MESSAGE` to the program's stderr (whatever `sys.stderr` is at the time),
and does not propagate (as `transformers` does): a program that wants the lines in its own
logging sets `logging.getLogger("hooktui").propagate = True` and removes that handler;
`logging.getLogger("hooktui").setLevel(logging.WARNING)` silences them.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings

__all__ = ["HooktuiWarning", "info", "logger", "warn"]


class HooktuiWarning(UserWarning):
    """Something hooktui could not do for you (save a trace, check a step), said as a warning
    so that a program can filter it."""


class _Stderr(logging.StreamHandler):
    """A StreamHandler on the current `sys.stderr` (a redirect, a test's capture), not the one
    there when hooktui was imported."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("hooktui: %(message)s"))

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:  # StreamHandler.__init__ sets it: the current stderr is always used
        pass


logger = logging.getLogger("hooktui")
if not any(isinstance(handler, _Stderr) for handler in logger.handlers):
    logger.addHandler(_Stderr())
    logger.setLevel(logging.INFO)
    logger.propagate = False


def info(message: str) -> None:
    """Information for the person running the program (stderr by default)."""
    logger.info(message)


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def warn(message: str) -> None:
    """A HooktuiWarning, attributed to the first frame outside hooktui and torch (the user's
    line that called hooktui.debug, or ran the step a guard watches)."""
    torch = sys.modules.get("torch")
    torch_dir = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep if getattr(torch, "__file__", None) else None
    frame, level = sys._getframe(1), 2
    while frame.f_back is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not (path.startswith(_PACKAGE) or (torch_dir and path.startswith(torch_dir))):
            break
        frame, level = frame.f_back, level + 1
    try:
        warnings.warn(message, HooktuiWarning, stacklevel=level)
    except Warning:
        # A filter made it an error (`-W error`, pytest's filterwarnings): raised here, often
        # inside a hook in the user's forward or backward, it would change the run hooktui
        # watches, which hooktui never does. Said on the logger instead, at ERROR.
        logger.error(message)
