"""The exceptions hooktui raises in the user's program (no torch needed to import them)."""

from __future__ import annotations


class Quit(SystemExit):
    """Raised by `hooktui.debug` when the app is quit (`q`) before the step ended, like pdb's
    BdbQuit. A SystemExit, so a training loop's `except Exception` does not swallow it;
    uncaught, it ends the program with one line on stderr and exit status 1 (finally blocks
    and atexit handlers run). `hooktui run` ends with status 0 on it."""

    def __init__(self, where: str = "") -> None:
        at = f" at {where}" if where else ""
        super().__init__(f"hooktui: quit in the debugger{at}; the program stops here (hooktui.Quit)")
        self.where = where
