"""The debug app on real terminals of every size (issue 29): `hooktui.debug` in a plain
script and under `hooktui run`, opened small and large, resized while open, stepped, quit;
and SIGTERM / SIGHUP ending an app whose event loop is kept busy.

The app moves file descriptor 1 aside while it is open (loop/in_app.py), so stdout is not
the terminal: Textual's driver measured 80x24 there while the rest of Textual measured the
real size, and from 120x32 up the screen was resized between the two for ever, blank.
A drawn screen is checked by the rows the app addresses: the last row of the terminal, and
none below it.
"""

from __future__ import annotations

import re
import signal
import time

import pytest

from pty_run import LEAVE_ALT_SCREEN, ROOT, PtyApp

TRAIN = ("sample_models/train_loop.py", "--steps", "3", "--debug-step", "1")
ENV = {"PYTHONPATH": str(ROOT)}
QUIT_STATUS = 1  # hooktui.Quit: `q` before the step ended


def rows_drawn(output: bytes) -> list[int]:
    """The rows the app moved the cursor to, in order (Textual addresses every line it updates)."""
    return [int(row) for row in re.findall(rb"\x1b\[(\d+);\d+H", output)]


def drawn_for(rows: list[int], lines: int) -> bool:
    """The last frame fits a terminal of `lines`: its last row drawn after any row below it
    (a frame for the previous size may still be on its way as the terminal is resized)."""
    below = max((i for i, row in enumerate(rows) if row > lines), default=-1)
    return lines in rows[below + 1 :]


def wait_drawn(app: PtyApp, since: int, lines: int, timeout: float = 30.0) -> None:
    """Until the app has drawn a screen of `lines` rows, since output position `since`;
    then nothing below it."""
    deadline = time.monotonic() + timeout
    while not drawn_for(rows_drawn(app.text()[since:]), lines):
        if app.process.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"no screen of {lines} rows drawn; last rows addressed {rows_drawn(app.text()[since:])[-5:]}")
        time.sleep(0.05)
    settled = len(app.text())
    time.sleep(0.5)
    assert max(rows_drawn(app.text()[settled:]), default=0) <= lines, "drew below the terminal's last row"


def plain(output: bytes) -> bytes:
    return re.sub(rb"\x1b\[[0-9;]*m", b"", output)  # colours and styles out


def step_and_quit(app: PtyApp) -> None:
    mark = len(app.text())
    app.press("n")
    deadline = time.monotonic() + 30
    while b"paused  #1 " not in plain(app.text()[mark:]):  # the status line names the new firing
        assert time.monotonic() < deadline, "n did not move to firing #1"
        time.sleep(0.05)
    app.press("q")
    app.wait_exit(60)


@pytest.mark.parametrize("size", [(80, 24), (120, 32), (160, 48), (200, 60)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_debug_in_a_script_draws_at_every_size_steps_and_quits(size):
    with PtyApp(*TRAIN, python=True, size=size, env=ENV) as app:
        app.wait_for(rb"paused", 60)
        wait_drawn(app, 0, size[1])
        step_and_quit(app)
        assert app.process.returncode == QUIT_STATUS
        assert app.terminal_cooked()
        assert b"hooktui: quit in the debugger at train_loop.py" in app.text()


def test_hooktui_run_debug_step_draws_large_with_stdout_redirected(tmp_path):
    """`hooktui run` (the supervised command), its output sent to a log as many training
    jobs do: the app opens on stdin and stderr, stdout is a file."""
    log = tmp_path / "log.txt"
    with PtyApp("run", *TRAIN, size=(120, 40), env=ENV, stdout=log) as app:
        app.wait_for(rb"paused", 60)
        wait_drawn(app, 0, 40)
        step_and_quit(app)
        assert app.process.returncode == 0  # `hooktui run` ends a quit script with 0 and one line
        assert b"quit in the debugger" in app.text()
        assert app.terminal_cooked()
    assert "step   0" in log.read_text()  # the script's own prints went to its stdout


def test_resizing_the_open_debug_app_redraws_at_each_size():
    with PtyApp(*TRAIN, python=True, size=(80, 24), env=ENV) as app:
        app.wait_for(rb"paused", 60)
        wait_drawn(app, 0, 24)
        for size in [(200, 60), (120, 40), (80, 24), (160, 48)]:
            mark = len(app.text())
            app.resize(size)
            wait_drawn(app, mark, size[1])
        step_and_quit(app)
        assert app.process.returncode == QUIT_STATUS
        assert app.terminal_cooked()


# An app whose event loop one widget keeps busy: its message handler posts the next message
# before it returns, so Textual's pump never yields to asyncio (as the resize storm did).
BUSY = """\
import sys
from pathlib import Path
sys.argv = ["train_loop.py", "--steps", "3", "--debug-step", "1"]
from textual.message import Message
from textual.widget import Widget

import hooktui.ui.debug_app as debug_app


class Busy(Widget):
    class Again(Message, bubble=False):
        pass

    def on_mount(self):
        self.post_message(self.Again())

    def on_busy_again(self, message):
        if not getattr(self, "said", False):  # the loop is busy from here on: the test's mark
            self.said = True
            print("busy now", file=sys.__stderr__, flush=True)
        self.post_message(self.Again())


class BusyApp(debug_app.DebugApp):
    CSS_PATH = str(Path(debug_app.__file__).with_name("app.tcss"))

    def on_ready(self):
        self.mount(Busy())


debug_app.DebugApp = BusyApp
import runpy
runpy.run_path("sample_models/train_loop.py", run_name="__main__")
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=lambda s: signal.Signals(s).name)
def test_a_signal_ends_a_debug_app_whose_event_loop_is_busy(tmp_path, signum):
    script = tmp_path / "busy.py"
    script.write_text(BUSY)
    with PtyApp(script, python=True, size=(120, 40), env=ENV) as app:
        app.wait_for(rb"busy now", 60)  # said from inside the loop that never yields: no delay needed
        ended = app.end(lambda: app.process.send_signal(signum), within=60, settle=0)
    # The documented exit: the terminal back, the step stopped, then the signal reaches the
    # program with its default action (the script has no handler of its own).
    assert app.process.returncode == -signum
    assert ended.cooked and LEAVE_ALT_SCREEN in ended.after
    assert b"Traceback" not in ended.after
