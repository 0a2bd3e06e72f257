"""The terminal is always restored (issue 24), whatever ends the app: os._exit or a segfault
in the model's forward, SIGKILL of the app's process, SIGQUIT / SIGUSR1 / SIGALRM; SIGINT
gives exit status 130 and one line. hooktui/supervise.py's parent does what Python cannot."""

from __future__ import annotations

import os
import signal
import textwrap
import time

import pytest

from pty_run import LEAVE_ALT_SCREEN, MOUSE_OFF, Ended, PtyApp

SHOW_CURSOR = b"\x1b[?25h"

ENDING = textwrap.dedent(
    """
    import ctypes, os
    import torch
    from torch import nn

    class Ending(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.fc = nn.Linear(3, 1)

        def forward(self, x):
            if os.environ["HOOKTUI_TEST_END"] == "exit":
                os._exit(7)
            ctypes.string_at(0)  # a segfault
            return self.fc(x)

    model = Ending()
    inputs = torch.ones(2, 3)
    """
)


def _check(ended: Ended) -> None:
    after = ended.after
    assert LEAVE_ALT_SCREEN in after and MOUSE_OFF in after and SHOW_CURSOR in after, after[-300:]
    assert ended.cooked, "the terminal was left in raw mode"


@pytest.mark.parametrize("end, status", [("exit", 7), ("segfault", 128 + signal.SIGSEGV)])
def test_the_model_ending_the_process_leaves_the_terminal_restored(tmp_path, end, status):
    model = tmp_path / "ending.py"
    model.write_text(ENDING)
    with PtyApp("open", model, env={"HOOKTUI_TEST_END": end}) as app:
        app.wait_for(rb"paused", 60)
        ended = app.end(lambda: app.press("c"), within=60)
    assert app.process.returncode == status
    _check(ended)
    assert b"the terminal was restored" in ended.after


def _child_of(pid: int) -> int:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        children = f.read().split()
    assert len(children) == 1, children
    return int(children[0])


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="finds the app's process in /proc")
def test_sigkill_of_the_apps_process_leaves_the_terminal_restored():
    with PtyApp("open", "sample_models/seed.py") as app:
        app.wait_for(rb"paused", 60)
        ended = app.end(lambda: os.kill(_child_of(app.process.pid), signal.SIGKILL), within=60)
    assert app.process.returncode == 128 + signal.SIGKILL
    _check(ended)
    assert b"ended by SIGKILL; the terminal was restored" in ended.after


@pytest.mark.parametrize("signum", [signal.SIGQUIT, signal.SIGUSR1, signal.SIGALRM, signal.SIGINT])
def test_other_signals_restore_the_terminal(signum):
    with PtyApp("open", "sample_models/seed.py") as app:
        app.wait_for(rb"paused", 60)
        ended = app.end(lambda: app.process.send_signal(signum), within=60)
    assert app.process.returncode == 128 + signum
    _check(ended)
    if signum == signal.SIGINT:
        after = ended.after
        assert after.rstrip().splitlines()[-1].endswith(b"hooktui: interrupted (Ctrl+C)"), after[-200:]
        assert b"Traceback" not in after


RUN_SCRIPT = textwrap.dedent(
    """
    import torch
    from torch import nn
    import hooktui

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    x = torch.ones(2, 3)
    hooktui.debug(model, lambda: model(x).sum())
    print("after the step")
    """
)


def test_sigint_to_hooktui_run_with_the_app_open_is_130_and_one_line(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(RUN_SCRIPT)
    with PtyApp("run", script) as app:
        # Paused: the app has mounted, so its signal handlers are in place (ui/ending.py).
        app.wait_for(rb"paused", 60)
        ended = app.end(lambda: app.process.send_signal(signal.SIGINT), within=60, settle=0)
    after = ended.after
    assert app.process.returncode == 130, after[-300:]
    _check(ended)
    assert b"crashed" not in after and b"Traceback" not in after and b"after the step" not in after, after[-300:]
    assert after.rstrip().splitlines()[-1].endswith(b"hooktui: interrupted (Ctrl+C); " + str(script).encode() + b" stopped")


# The app's start held open by the test: its compose waits until the test says the signal was sent.
SLOW_START = textwrap.dedent(
    """
    import os, sys, time
    import torch
    from torch import nn
    import hooktui
    import hooktui.ui.debug_app as debug_app

    class SlowStart(debug_app.DebugApp):
        CSS_PATH = os.path.join(os.path.dirname(debug_app.__file__), "app.tcss")

        def compose(self):
            print("composing", file=sys.__stderr__, flush=True)
            deadline = time.monotonic() + 60
            while not os.path.exists(__file__ + ".sent") and time.monotonic() < deadline:
                time.sleep(0.01)
            return super().compose()

    debug_app.DebugApp = SlowStart
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    x = torch.ones(2, 3)
    hooktui.debug(model, lambda: model(x).sum())
    print("after the step")
    """
)


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="finds the app's process in /proc")
def test_sigint_while_the_app_starts_is_130_and_one_line(tmp_path):
    """Before the app had mounted, asyncio's own SIGINT handler took the signal: it cancelled
    the app's task in the middle of its compose (a Textual traceback), and the terminal was
    left for the supervising parent to restore. The app's handlers are in place before
    Textual starts (ui/ending.py)."""
    script = tmp_path / "train.py"
    script.write_text(SLOW_START)
    with PtyApp("run", script) as app:
        app.wait_for(rb"composing", 60)
        # To the app's own process (not through the supervisor): received before the mark below.
        child = _child_of(app.process.pid)

        def interrupt() -> None:
            os.kill(child, signal.SIGINT)
            (tmp_path / "train.py.sent").touch()

        ended = app.end(interrupt, within=60, settle=0)
    after = ended.after
    assert app.process.returncode == 130, after[-600:]
    _check(ended)
    assert b"Traceback" not in after and b"Error" not in after and b"after the step" not in after, after[-600:]
    assert b"the process ended with the app open" not in after, after[-300:]  # the app gave the terminal back itself
    assert after.rstrip().splitlines()[-1].endswith(b"hooktui: interrupted (Ctrl+C); " + str(script).encode() + b" stopped")


def test_sigint_to_view_is_130_and_one_line(tmp_path):
    import hostile

    trace = hostile.write(tmp_path / "run.jsonl")
    with PtyApp("view", trace) as app:
        app.wait_for(rb"forward_pre", 60)
        ended = app.end(lambda: app.process.send_signal(signal.SIGINT), within=60)
    after = ended.after
    assert app.process.returncode == 130, after[-300:]
    _check(ended)
    assert after.rstrip().splitlines()[-1].endswith(b"hooktui: interrupted (Ctrl+C)") and b"Traceback" not in after


GIL = textwrap.dedent(
    """
    import torch
    from torch import nn

    class Busy(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.fc = nn.Linear(3, 1)

        def forward(self, x):
            print("entering the busy forward")
            open(__file__ + ".entered", "w").close()  # for the test: the call comes next
            sum(range(10**11))  # one C call that holds the GIL for minutes
            return self.fc(x)

    model = Busy()
    inputs = torch.ones(2, 3)
    """
)


def test_sigterm_ends_the_app_while_a_c_call_holds_the_gil(tmp_path):
    """No Python runs, not even a signal handler: the supervisor kills the app's process
    KILL_AFTER seconds after SIGTERM and restores the terminal (q cannot: README)."""
    from hooktui.supervise import KILL_AFTER

    model = tmp_path / "busy.py"
    model.write_text(GIL)
    with PtyApp("open", model) as app:
        app.wait_for(rb"paused", 60)
        app.press("c")
        # Into the forward (the app may not get to draw once the call holds the GIL): its
        # mark, then a moment for the call itself to start.
        entered = tmp_path / "busy.py.entered"
        deadline = time.monotonic() + 60
        while not entered.exists():
            assert time.monotonic() < deadline and app.process.poll() is None, "the forward never began"
            time.sleep(0.05)
        # within: a safety net (the call would hold the GIL for many minutes)
        ended = app.end(lambda: app.process.send_signal(signal.SIGTERM), within=KILL_AFTER + 120, settle=1.0)
    assert app.process.returncode == 128 + signal.SIGTERM
    _check(ended)
    assert b"did not end within" in ended.after and b"the terminal was restored" in ended.after


KEEPS_HANDLER = textwrap.dedent(
    """
    import signal
    import torch
    from torch import nn
    import hooktui

    signal.signal(signal.SIGUSR1, lambda *_: print("the program's own SIGUSR1 handler", flush=True))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    x = torch.ones(2, 3)
    try:
        hooktui.debug(model, lambda: model(x).sum())
    except hooktui.Quit:
        pass
    print("after the step", flush=True)
    """
)


def test_a_signal_that_ends_the_app_reaches_the_programs_own_handler(tmp_path):
    """hooktui.debug in the user's program: SIGUSR1 (a cluster's "checkpoint now") ends the
    app, the terminal comes back, then the program's own handler runs and it goes on."""
    script = tmp_path / "train.py"
    script.write_text(KEEPS_HANDLER)
    with PtyApp(str(script), python=True) as app:
        app.wait_for(rb"paused", 60)
        ended = app.end(lambda: app.process.send_signal(signal.SIGUSR1), within=60)
    _check(ended)
    assert b"the program's own SIGUSR1 handler" in ended.after, ended.after[-300:]
    assert app.process.returncode == 0, ended.after[-300:]
