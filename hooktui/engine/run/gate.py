"""The pause gate: the worker thread blocks here after each firing until told to go on."""

from __future__ import annotations

import threading
from typing import Any

from ..analysis.breakpoints import Breakpoint, BreakpointList, Stop
from ..capture.quit import QuitRequested
from ..records.records import Event


# What a model may raise and have recorded as its failure (while it loads, in forward, in
# backward): sys.exit() and KeyboardInterrupt inside a model are the model's doing, not a
# reason for hooktui to stop. QuitRequested is not among them.
MODEL_ERRORS = (Exception, SystemExit, KeyboardInterrupt)


class Gate:
    """Step / continue / quit, with breakpoints. Thread-safe.

    Modes: "step" pauses at the next firing; "continue" pauses at a breakpoint;
    "run" never pauses (recording). Breakpoints are checked at every firing outside
    "run" mode, so their hit counts are true whatever the mode; `stop` says why the
    latest pause happened when a breakpoint matched there.
    """

    def __init__(self, pause: bool = True) -> None:
        self._cond = threading.Condition()
        self._mode = "step" if pause else "run"
        self._released = False
        self._quit = False
        self.breakpoint_list = BreakpointList()
        self.stop: Stop | None = None
        self.break_on_backward = False
        self._last_phase: str | None = None
        self.paused = False
        # Hook kinds that never pause (e.g. legacy_backward while the UI hides them).
        self.skip_hooks: set[str] = set()
        self._into = False
        self._finish: tuple[str, int] | None = None

    # -- commands (any thread) -------------------------------------------------
    def step(self) -> None:
        self._release("step")

    def resume(self) -> None:
        self._release("continue")

    def run_to_end(self) -> None:
        self._release("run")

    def step_into(self) -> None:
        """Step, and have the worker hook the autograd nodes of the call it is paused in."""
        with self._cond:
            self._into = True
        self._release("step")

    def finish(self, module: str, call: int) -> None:
        """Run until the backward firing of this module call (or a breakpoint)."""
        with self._cond:
            self._finish = (module, call)
        self._release("finish")

    def take_step_into(self) -> bool:
        """Worker side: was a step-into asked for? (Clears the request.)"""
        if not self._into:  # asked at every firing: no lock for the common answer
            return False
        with self._cond:
            into, self._into = self._into, False
            return into

    def quit(self) -> None:
        with self._cond:
            self._quit = True
            self._cond.notify_all()

    @property
    def released(self) -> bool:
        """Told to go on since the latest pause began (an on_pause listener may do so)."""
        return self._released

    @property
    def quitting(self) -> bool:
        return self._quit

    def _release(self, mode: str) -> None:
        with self._cond:
            self._mode = mode
            self._released = True
            self._cond.notify_all()

    # -- breakpoints -----------------------------------------------------------
    def toggle_breakpoint(self, bp: Breakpoint) -> bool:
        """Add or remove `bp`; True when it is now set."""
        return self.breakpoint_list.toggle(bp)

    @property
    def breakpoints(self) -> frozenset[Breakpoint]:
        """The enabled breakpoints."""
        return self.breakpoint_list.enabled

    def should_pause(self, event: Event, live: Any = None) -> bool:
        entering_backward = event.phase == "backward" and self._last_phase != "backward"
        self._last_phase = event.phase
        if event.hook in self.skip_hooks or self._mode == "run":
            return False
        stop = self.breakpoint_list.check(event, live) if len(self.breakpoint_list) else None
        self.stop = stop
        if self._mode == "step":
            return True
        if self._mode == "finish" and event.hook == "backward" and (event.module, event.call) == self._finish:
            return True
        if entering_backward and self.break_on_backward:
            return True
        return stop is not None

    # -- worker side -----------------------------------------------------------
    def check(self, event: Event, on_pause=None, live: Any = None) -> None:
        """Called by the worker after each firing: pause here if the mode or a breakpoint says so."""
        if self._quit:
            raise QuitRequested
        if not self.should_pause(event, live):
            return
        with self._cond:
            self._released = False
            self.paused = True
            if on_pause is not None:
                on_pause(event)
            # Wake regularly so a quit can never be missed.
            while not self._released and not self._quit:
                self._cond.wait(timeout=0.1)
            self.paused = False
        if self._quit:
            raise QuitRequested
