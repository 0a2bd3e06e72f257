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


class GuardError(Exception):
    """Raised by `hooktui.guard` at the first bad value (NonFiniteError, ThresholdError).

    `born`: where it was born (engine/analysis/born.py's Born: phase, module, call, tensor, lines);
    `index` (and `sub`, its sub-number: `number` says "17.1"): the firing, in the saved trace
    and as `trace` numbers it (engine/records/firing.py); `step`: which step under the guard (0 = the
    first); `trace_path`: the trace file of the step's firings so far (None if not saved).
    """

    def __init__(self, message: str, *, born=None, index: int | None = None, sub: int = 0, step: int = 0,
                 trace_path=None) -> None:
        super().__init__(message)
        self.born, self.index, self.sub, self.step, self.trace_path = born, index, sub, step, trace_path

    @property
    def number(self) -> str | None:
        """The firing's number as every view prints it after `#` ("17", "17.1")."""
        if self.index is None:
            return None
        return f"{self.index}.{self.sub}" if self.sub else str(self.index)


class NonFiniteError(GuardError):
    """A NaN (or +/-Inf) in a tensor of a firing: an activation, a gradient, a `.grad`."""


class ThresholdError(GuardError):
    """A tensor's norm or abs-max above a bound given to `hooktui.guard`."""


# Shown as `hooktui.Quit`, `hooktui.NonFiniteError`, ... in tracebacks: the names users import.
for _error in (Quit, GuardError, NonFiniteError, ThresholdError):
    _error.__module__ = "hooktui"
