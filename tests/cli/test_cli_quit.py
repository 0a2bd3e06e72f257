"""Quitting on a real terminal: `q` ends the process even while the model is in a 10-minute
forward (before that forward ends) or an endless loop; SIGTERM and SIGHUP restore the
terminal and exit; what the model printed is shown after the app."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from pty_run import LEAVE_ALT_SCREEN, MOUSE_OFF, PtyApp

HERE = Path(__file__).resolve().parent


@pytest.mark.parametrize("kind", ["sleep", "loop"])
def test_q_ends_the_process_during_a_long_forward(kind):
    with PtyApp("open", HERE / "slow_models.py", env={"HOOKTUI_TEST_SLOW": kind}) as app:
        app.wait_for(rb"paused", 60)
        app.press("c")
        app.wait_for(rb"printing", 60)  # the app saw the model's print: it is inside forward
        after, cooked, _ = app.end(lambda: app.press("q"), within=60, settle=0.5)  # within: a safety net
    assert app.process.returncode == 0
    assert b"leaving the slow forward" not in after, "q waited for the model's forward to end"
    assert LEAVE_ALT_SCREEN in after and MOUSE_OFF in after
    assert cooked, "the terminal was left in raw mode"
    # The model's print was kept and shown once the terminal was back.
    assert after.index(b"entering the slow forward") > after.index(LEAVE_ALT_SCREEN)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_while_paused_restores_the_terminal_and_exits(signum):
    with PtyApp("open", "sample_models/seed.py") as app:
        app.wait_for(rb"paused", 60)
        after, cooked, _ = app.end(lambda: app.process.send_signal(signum), within=60)
    assert app.process.returncode == 128 + signum
    assert LEAVE_ALT_SCREEN in after and MOUSE_OFF in after
    assert cooked, "the terminal was left in raw mode"


def test_a_dropped_connection_during_an_endless_forward_ends_the_process():
    """SSH drops: the terminal is gone (its master closed) and SIGHUP arrives."""
    with PtyApp("open", HERE / "slow_models.py", env={"HOOKTUI_TEST_SLOW": "loop"}) as app:
        app.wait_for(rb"paused", 60)
        app.press("c")
        app.wait_for(rb"printing", 60)
        os.close(app.master)
        os.killpg(app.process.pid, signal.SIGHUP)
        app.wait_exit(60)  # the model's loop is endless: an exit at all is the check
    assert app.process.returncode != 0


def test_R_restarts_the_run_in_the_same_process_and_q_then_quits():
    """`R` after `c` to the end: the app again, paused at the model's first firing (a new
    run in the same process: no second start of Python and torch), and `q` ends it with 0."""
    with PtyApp("open", "sample_models/seed.py") as app:
        app.wait_for(rb"paused", 60)
        app.press("c")
        app.wait_for(rb"finished", 60)
        mark = len(app.text())
        app.press("R")
        deadline = time.monotonic() + 60  # the next app: "paused" again, after the mark
        while b"paused" not in app.text()[mark:]:
            assert app.process.poll() is None and time.monotonic() < deadline, app.text()[-400:]
            time.sleep(0.05)
        after, cooked, _ = app.end(lambda: app.press("q"), within=60)
    assert app.process.returncode == 0
    assert LEAVE_ALT_SCREEN in after and cooked


@pytest.mark.parametrize("command", [("open", "sample_models/seed.py")])
def test_the_terminal_gone_without_a_sighup_ends_the_app(command):
    """The terminal's far end closed and no SIGHUP sent (the supervising parent SIGKILLed,
    a session with no controlling terminal, as here): Textual's key thread read end-of-file
    in a loop, and the app spun at 40% of a core for ever, the model and its memory held."""
    with PtyApp(*command) as app:
        app.wait_for(rb"paused", 60)
        os.close(app.master)
        app.master = os.open(os.devnull, os.O_RDONLY)  # the reader ends on it; close() closes it
        app.wait_exit(60)
    assert app.process.returncode == 128 + signal.SIGHUP
