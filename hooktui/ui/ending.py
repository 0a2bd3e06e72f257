"""Signals end the app, even when its event loop never comes back to read them.

asyncio's `add_signal_handler` runs a handler on the event loop, so a loop that one task
keeps busy never runs it: Textual's message pump does not yield while its queue is never
empty, and a screen that lays itself out again and again (issue 29: a terminal measured
two ways) left SIGTERM unanswered for ever. So the app's own signals are taken with
`signal.signal`, whose handler Python runs in the main thread between two bytecodes,
wherever that thread is. The handler only asks: the app ends from its event loop as
usual (terminal restored, exit status 128 + N). A watchdog thread, started with the app,
gives it GRACE seconds; if the app is still open then, it raises `EndedBySignal` in the
main thread, which unwinds `App.run` (asyncio cancels the app's task, and Textual gives
the terminal back on the way out). Only a C call that holds the GIL stops the watchdog
too; `hooktui MODEL.py`'s supervising parent covers that (supervise.py).

The watchdog is for a loop that never answers. Once the loop has answered (the app is
ending its own way), an exception raised into the main thread would land in the middle of
Textual's exit, wherever it was: between the sequences that stop mouse reporting and the
one that leaves the alternate screen, on a loaded machine whose exit took longer than
GRACE, and the terminal was left in the alternate screen. So the watchdog stands down
when the loop answers (a lock orders the two: it unwinds before the answer or not at
all), and only an app still open ANSWERED_GRACE seconds after answering is unwound.
"""

from __future__ import annotations

import ctypes
import signal
import threading
from collections.abc import Callable, Iterable

GRACE = 2.0  # seconds an app asked to end by a signal gets before it is unwound
ANSWERED_GRACE = 30.0  # seconds an app that is ending its own way gets (a safety net)


class EndedBySignal(SystemExit):
    """Raised in the main thread when the app did not end GRACE seconds after a signal.

    A SystemExit, so that asyncio lets it out of its tasks (it keeps other exceptions on
    the task) and `App.run` unwinds; the signal itself is the Ending's `signum`."""


class Ending:
    """The signals that end one app run: install, then `closed()` once `App.run` returned."""

    def __init__(self, signals: Iterable[int], on_signal: Callable[[int], None], grace: float = GRACE) -> None:
        self.signals = tuple(signals)
        self.on_signal = on_signal  # called on the event loop: the app's own way to end
        self.grace = grace
        self.signum: int | None = None  # the first signal received
        self.unwound = False  # the watchdog had to unwind the main thread
        self._requested = threading.Event()
        self._answered = threading.Event()  # the event loop began ending the app (or it closed)
        self._closed = threading.Event()
        self._deciding = threading.Lock()  # the loop's answer and the watchdog's unwinding: one or the other first
        self._main = threading.main_thread().ident
        self._loop = None
        self._saved: dict[int, object] = {}

    def install(self, loop=None) -> None:
        """From the main thread: before Textual starts (`App.run`), so that a signal during
        the app's start is this app's too (asyncio's own SIGINT handler cancelled the app's
        task in the middle of its compose: a traceback, and the terminal left raw), kept
        until the event loop is known (`attach`, as the app mounts)."""
        for signum in self.signals:
            self._saved[signum] = signal.signal(signum, self._received)
        threading.Thread(target=self._watch, name="hooktui signal watchdog", daemon=True).start()
        if loop is not None:
            self.attach(loop)

    def attach(self, loop) -> None:
        """The app's event loop, from its thread: a signal received before it is answered now."""
        self._loop = loop
        if self.signum is not None:
            loop.call_soon_threadsafe(self._answer, self.signum)

    def closed(self) -> None:
        """`App.run` returned (or unwound): the watchdog stands down, the handlers go back."""
        self._closed.set()
        self._answered.set()
        self._requested.set()  # wakes the watchdog, which sees closed
        for signum, handler in self._saved.items():
            try:
                signal.signal(signum, handler)
            except (ValueError, OSError, TypeError):
                pass
        self._saved.clear()

    def _received(self, signum: int, frame) -> None:
        # In the main thread, between two bytecodes of whatever it was doing: ask, no more.
        if self.signum is not None:
            return
        self.signum = signum
        self._requested.set()
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._answer, signum)

    def _answer(self, signum: int) -> None:
        """On the event loop: the app ends its own way, the watchdog stands down (unless it
        has already unwound the main thread: then its exception comes instead)."""
        with self._deciding:
            if self.unwound or self._answered.is_set():  # unwound, closed, or answered already
                return
            self._answered.set()
        self.on_signal(signum)

    def _watch(self) -> None:
        self._requested.wait()
        if self.signum is None:  # closed with no signal
            return
        self._answered.wait(self.grace)
        with self._deciding:
            if not self._answered.is_set():  # the event loop did not get to end the app
                self._unwind()
                return
        # The app is ending its own way; only one whose exit is stuck is unwound.
        if not self._closed.wait(ANSWERED_GRACE):
            self._unwind()

    def _unwind(self) -> None:
        """EndedBySignal in the main thread, wherever it is."""
        self.unwound = True
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._main), ctypes.py_object(EndedBySignal))


def give_back_terminal(app) -> None:
    """After an unwound `App.run`: what Textual's own exit would have done to the terminal
    (raw mode off, the alternate screen left, the cursor shown), in case its cleanup did
    not get to it. Stopping application mode twice only writes the same sequences again."""
    driver = getattr(app, "_driver", None)
    if driver is None:
        return
    try:
        driver.stop_application_mode()
        driver.close()
    except Exception:  # the terminal may be gone (SIGHUP)
        pass
