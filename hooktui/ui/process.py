"""Running the app as the process's one job (`hooktui open` and `hooktui view`).

- The exit status says how it ended: 0 after `q`, 1 when the app crashed (Textual's own
  status; never 0), 128 + N after signal N (SIGTERM, SIGHUP, SIGINT with one line, SIGQUIT,
  SIGUSR1/2, SIGALRM: the terminal is restored first). What Python cannot see (os._exit, a
  segfault, SIGKILL) the supervising parent restores (hooktui/supervise.py).
- What the model printed while the app held the terminal is written to stderr afterwards.
- The process ends within moments of the app, whatever the model is doing: its thread is
  told to quit, but a model inside a 30 s forward or an endless loop only notices at its
  next firing, so after a short wait the process exits without it (os._exit, once the
  terminal is back and the streams are flushed). It exits that way even when the model did
  stop: the app was the process's one job, and tearing down an interpreter with torch
  loaded takes seconds on a busy machine (measured: 3.6 s at a load of 4 on 2 cores).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from ..errors import EXIT_INTERRUPTED, INTERRUPTED_MESSAGE

if TYPE_CHECKING:
    from .app import HooktuiApp

MODEL_GRACE = 0.1  # seconds the model's thread gets to end on its own after the app
RESTART_WAIT = 10.0  # seconds `R` waits for the model's thread to stop before the next run
EXIT_CRASHED = 1


def run_app(app: HooktuiApp, *, headless: bool = False) -> int:
    from ..supervise import app_gave_back_terminal, app_takes_terminal

    status = EXIT_CRASHED
    try:
        while True:
            app.exit_on_signals = True
            if not headless:
                app_takes_terminal()
            app.run(headless=headless)
            if not headless:
                app_gave_back_terminal()
            status = exit_status(app)
            write_model_output(app.model_output)
            if not (app.restart_requested and app.restart is not None and status == 0):
                break
            # `R`: the model's thread stops at its next firing (it is paused at one, or done);
            # the next run starts once it has, on the model as the run left it (restored).
            if not app.source.join(RESTART_WAIT):
                _say(f"hooktui: not restarted: the model did not stop within {RESTART_WAIT:.0f} s (inside a long call?)")
                break
            app = app.restart(app)
        if status == EXIT_INTERRUPTED:
            _say(INTERRUPTED_MESSAGE)
    finally:
        app.source.join(MODEL_GRACE)
        if not headless:  # headless: in-process tests, which must live on
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError, AttributeError):  # the terminal may be gone (SIGHUP)
                    pass
            os._exit(status)
    return status


def _say(line: str) -> None:
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def write_model_output(output: list[str]) -> None:
    if not output:
        return
    text = "".join(output)
    try:
        sys.stderr.write("hooktui: the model printed, while the app was open:\n" + text + ("" if text.endswith("\n") else "\n"))
        sys.stderr.flush()
    except (OSError, ValueError):  # no terminal left to print on
        pass


def exit_status(app: HooktuiApp) -> int:
    """The app's return code; a crash is never 0."""
    code = app.return_code
    if getattr(app, "_exception", None) is not None and not code:
        return EXIT_CRASHED
    return EXIT_CRASHED if code is None else code
