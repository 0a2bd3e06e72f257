"""The app on a step of the user's program: the app owns the terminal on this (the main)
thread, the step runs on the app's model thread (ui/sources.py LiveSource).

Unlike `hooktui MODEL.py` (ui/process.py), the process is the user's and must go on, so
nothing here ends it: after the app, the step's thread is waited for. A step quit while
paused at a firing stops at once; a step inside a long forward stops at its next module
call, and until then the program waits (Ctrl+C interrupts the wait).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from ..engine.capture import collector
from ..ui.process import exit_status, write_model_output
from . import say

if TYPE_CHECKING:
    from textual.app import App

    from ..engine.run.session import Session

WAIT_QUIETLY = 1.0  # seconds the step gets to stop before the program says it is waiting


def _run(app: App) -> None:
    from ..supervise import app_gave_back_terminal, app_takes_terminal

    app_takes_terminal()
    app.run()
    app_gave_back_terminal()


# How the app is run: on the terminal. Tests put Textual's pilot here.
open_app: Callable[[App], None] = _run


def debug_in_app(session: Session, call_site: str, on_quit: str) -> None:
    from ..ui.debug_app import DebugApp
    from ..ui.sources import LiveSource

    app = DebugApp(source=LiveSource(session), call_site=call_site, on_quit=on_quit)
    app.exit_on_signals = True
    with _stdout_aside(), _program_signal_handlers():
        open_app(app)
    write_model_output(app.model_output)
    status = exit_status(app)
    if status != 0:
        session.abort()  # a signal, or the app crashed: the step must not go on unwatched
    if session.state == "ready":
        # The app never got to start the step (its terminal failed): run it unwatched,
        # so the program gets the step it asked for.
        session.gate.run_to_end()
        session.run()
    else:
        _wait_for_step(app)
    # The app is closed: garbage with cycles (its history, its last firings' snapshots),
    # collected before the next step's run freezes the collector, not frozen beside it.
    collector.collect_before_next_run()
    if status > 128:
        # SIGTERM / SIGHUP reached the app: the terminal is back, now the program gets it.
        signal.raise_signal(status - 128)
    elif status != 0 and session.state != "finished":
        raise RuntimeError("the hooktui app crashed (its traceback is above); the step was stopped")


def show_recorded(app: App) -> None:
    """The app on recorded firings (hooktui.guard's on_error="debug"): no step to wait for;
    a signal reaches the program once the terminal is back."""
    app.exit_on_signals = True
    with _program_signal_handlers():
        open_app(app)
    status = exit_status(app)
    # As after a debug step: the closed app (its history) is collected before a later run
    # in this program (a debug step, a guard that goes on) freezes the collector.
    collector.collect_before_next_run()
    if status > 128:
        signal.raise_signal(status - 128)


def _wait_for_step(app: App) -> None:
    source = app.source
    if source.join(WAIT_QUIETLY):
        return
    say.info(
        "waiting for the step to reach its next module call to stop it "
        "(a long forward cannot be interrupted; Ctrl+C stops the program)"
    )
    while not source.join(0.5):
        pass


@contextlib.contextmanager
def _program_signal_handlers() -> Iterator[None]:
    """The program's own handlers of the signals the app takes while it is open (a SIGUSR1
    checkpoint handler, a SIGALRM timeout): put back after it, before the signal that ended
    the app is raised again (asyncio leaves SIG_DFL behind)."""
    from ..ui.app import EXIT_SIGNALS

    saved = {signum: signal.getsignal(signum) for signum in EXIT_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in saved.items():
            if handler is not None:
                try:
                    signal.signal(signum, handler)
                except (ValueError, OSError):  # not the main thread
                    pass


@contextlib.contextmanager
def _stdout_aside() -> Iterator[None]:
    """While the app draws on the terminal, what reaches file descriptor 1 from outside
    Python (a C extension's printf; Textual captures Python's prints) goes to a temporary
    file, written to stdout once the app is gone: it never lands on top of the app."""
    try:
        terminal = os.isatty(1)
    except OSError:
        terminal = False
    if not terminal:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile() as aside:
        os.dup2(aside.fileno(), 1)
        try:
            yield
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            aside.seek(0)
            sys.stdout.flush()
            with open(os.dup(1), "wb", closefd=True) as out:
                shutil.copyfileobj(aside, out)
