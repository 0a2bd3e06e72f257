"""The terminal is always restored (issue 24), whatever ends the app: os._exit or a segfault
in the model's forward, SIGKILL of the app's process, SIGQUIT / SIGUSR1 / SIGALRM; SIGINT
gives exit status 130 and one line. hooktui/supervise.py's parent does what Python cannot."""

from __future__ import annotations

import os
import signal
import textwrap
import time

import pytest

from pty_run import LEAVE_ALT_SCREEN, MOUSE_OFF, PtyApp

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


def _restored(app: PtyApp, before: int) -> tuple[bytes, bool]:
    return app.text()[before:], app.terminal_cooked()


def _check(after: bytes, cooked: bool) -> None:
    assert LEAVE_ALT_SCREEN in after and MOUSE_OFF in after and SHOW_CURSOR in after, after[-300:]
    assert cooked, "the terminal was left in raw mode"


@pytest.mark.parametrize("end, status", [("exit", 7), ("segfault", 128 + signal.SIGSEGV)])
def test_the_model_ending_the_process_leaves_the_terminal_restored(tmp_path, end, status):
    model = tmp_path / "ending.py"
    model.write_text(ENDING)
    app = PtyApp("open", model, env={"HOOKTUI_TEST_END": end})
    try:
        app.wait_for(rb"paused", 60)
        time.sleep(0.3)
        before = len(app.text())
        app.press("c")
        app.wait_exit(20)
        after, cooked = _restored(app, before)
    finally:
        app.close()
    assert app.process.returncode == status
    _check(after, cooked)
    assert b"the terminal was restored" in after


def _child_of(pid: int) -> int:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        children = f.read().split()
    assert len(children) == 1, children
    return int(children[0])


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="finds the app's process in /proc")
def test_sigkill_of_the_apps_process_leaves_the_terminal_restored():
    app = PtyApp("open", "sample_models/seed.py")
    try:
        app.wait_for(rb"paused", 60)
        time.sleep(0.3)
        before = len(app.text())
        os.kill(_child_of(app.process.pid), signal.SIGKILL)
        app.wait_exit(10)
        after, cooked = _restored(app, before)
    finally:
        app.close()
    assert app.process.returncode == 128 + signal.SIGKILL
    _check(after, cooked)
    assert b"ended by SIGKILL; the terminal was restored" in after


@pytest.mark.parametrize("signum", [signal.SIGQUIT, signal.SIGUSR1, signal.SIGALRM, signal.SIGINT])
def test_other_signals_restore_the_terminal(signum):
    app = PtyApp("open", "sample_models/seed.py")
    try:
        app.wait_for(rb"paused", 60)
        time.sleep(0.3)
        before = len(app.text())
        app.process.send_signal(signum)
        elapsed = app.wait_exit(10)
        after, cooked = _restored(app, before)
    finally:
        app.close()
    assert app.process.returncode == 128 + signum
    assert elapsed < 3.0
    _check(after, cooked)
    if signum == signal.SIGINT:
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
    app = PtyApp("run", script)
    try:
        app.wait_for(rb"paused", 60)
        time.sleep(0.3)
        before = len(app.text())
        app.process.send_signal(signal.SIGINT)
        app.wait_exit(20)
        after, cooked = _restored(app, before)
    finally:
        app.close()
    assert app.process.returncode == 130, after[-300:]
    _check(after, cooked)
    assert b"crashed" not in after and b"Traceback" not in after and b"after the step" not in after, after[-300:]
    assert after.rstrip().splitlines()[-1].endswith(b"hooktui: interrupted (Ctrl+C); " + str(script).encode() + b" stopped")


def test_sigint_to_view_is_130_and_one_line(tmp_path):
    import hostile

    trace = hostile.write(tmp_path / "run.jsonl")
    app = PtyApp("view", trace)
    try:
        app.wait_for(rb"forward_pre", 60)
        time.sleep(0.3)
        before = len(app.text())
        app.process.send_signal(signal.SIGINT)
        app.wait_exit(20)
        after, cooked = _restored(app, before)
    finally:
        app.close()
    assert app.process.returncode == 130, after[-300:]
    _check(after, cooked)
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
    app = PtyApp("open", model)
    try:
        app.wait_for(rb"paused", 60)
        app.press("c")
        time.sleep(2.0)  # into the forward: the app may not get to draw once the call holds the GIL
        before = len(app.text())
        app.process.send_signal(signal.SIGTERM)
        elapsed = app.wait_exit(KILL_AFTER + 10)
        after, cooked = _restored(app, before)
    finally:
        app.close()
    assert app.process.returncode == 128 + signal.SIGTERM
    assert elapsed < KILL_AFTER + 3, elapsed
    _check(after, cooked)
    assert b"did not end within" in after and b"the terminal was restored" in after


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
    app = PtyApp(str(script), python=True)
    try:
        app.wait_for(rb"paused", 60)
        time.sleep(0.3)
        before = len(app.text())
        app.process.send_signal(signal.SIGUSR1)
        app.wait_exit(20)
        after, cooked = _restored(app, before)
    finally:
        app.close()
    _check(after, cooked)
    assert b"the program's own SIGUSR1 handler" in after, after[-300:]
    assert app.process.returncode == 0, after[-300:]
