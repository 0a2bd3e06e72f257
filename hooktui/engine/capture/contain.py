"""Nothing hooktui does may change the user's run.

hooktui's code runs inside hooks that torch calls in the middle of the model's forward
and backward (and inside FSDP's collectives). An exception escaping from there would
abort the user's step half-way: a sharded model left unsharded, `.grad`s half written,
the user's own exception or a guard's NonFiniteError replaced by hooktui's. So every
hook the tracer installs (module, autograd node, parameter) runs through
`Containment.hook`, which catches hooktui's own failures and writes them on a firing as
notes ("hooktui failed ..."), and returns what torch expects when a hook changes nothing
(None). The wrappers of the user's own hooks (user_hooks.py) contain what hooktui does
before and after calling them, never the user's hook itself; the guard's root hooks
(loop/guard.py) let only its own errors through.

What does pass is what hooktui raises on purpose from a firing: the gate's QuitRequested
(a BaseException, never caught here) and whatever the listener of the firings raises
(`emit`: a guard's NonFiniteError); `Containment.emit` marks those on the way out.
A tensor summary that fails is the common case and is caught closer still
(`Tracer.describe`, and a lazy record's first read in records.py), so the firing keeps
its other tensors.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..records.records import Event


def failure_text(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


class Containment:
    """One tracer's: which exceptions pass, and the notes of those that did not."""

    def __init__(self) -> None:
        self._passing = threading.local()
        self._last: Event | None = None  # the latest firing emitted, which a failure note goes on
        self._pending: list[str] = []  # notes of failures before any firing
        # Every failure of the run (tests, and a caller that wants them all).
        self.failures: list[str] = []

    def emit(self, emit: Callable[[Event, Any], None], event: Event, live: Any) -> None:
        """Hand `event` to the listener; what the listener raises passes every hook wrapper."""
        self._last = event
        try:
            emit(event, live)
        except BaseException as exc:
            self._passing.exc = exc
            raise

    def passes(self, exc: BaseException) -> bool:
        return getattr(self._passing, "exc", None) is exc

    def take_pending(self) -> list[str]:
        notes = self._pending
        if notes:  # asked at every firing: no new list for the common answer
            self._pending = []
        return notes

    def failed(self, where: str, exc: BaseException) -> None:
        """hooktui's own code failed in `where`: noted on the latest firing (or the next)."""
        note = f"hooktui failed in {where} and left out what it would have recorded there: {failure_text(exc)}"
        self.failures.append(note)
        last = self._last
        if last is None:
            self._pending.append(note)
        else:
            last.notes = [*last.notes, note]  # a new list: NO_NOTES is shared

    def hook(self, fn: Callable, where: str) -> Callable:
        """`fn` as a hook that never raises hooktui's own exceptions into torch."""

        def contained(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except Exception as exc:
                if self.passes(exc):
                    raise
                self.failed(where, exc)
                return None

        return contained

    def call(self, where: str, fn: Callable, *args, **kwargs) -> Any:
        """Run `fn` now, contained as a hook is; None when it failed."""
        return self.hook(fn, where)(*args, **kwargs)
