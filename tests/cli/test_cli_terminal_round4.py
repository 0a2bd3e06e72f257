"""The terminal is never left broken and `q` always quits (issue 35, item 4), on a real
terminal: a model that closes descriptors 1 and 2, a model that reads stdin (`input()`)
or calls `breakpoint()`, the app's process group stopped (SIGSTOP) and resumed (SIGCONT);
and, under Textual's pilot, the command palette's page keys on a terminal too small for
its list (`KeyError: 0` in Textual's OptionList)."""

from __future__ import annotations

import asyncio
import os
import signal
import textwrap
import time
from pathlib import Path

import pytest

from processes import processes
from pty_run import LEAVE_ALT_SCREEN, MOUSE_OFF, Ended, PtyApp

SHOW_CURSOR = b"\x1b[?25h"

MISBEHAVING = textwrap.dedent(
    """
    import os
    import torch
    from torch import nn

    class Misbehaving(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.fc = nn.Linear(3, 1)

        def forward(self, x):
            how = os.environ["HOOKTUI_TEST_MISBEHAVE"]
            if how == "close":
                os.close(1)
                os.close(2)
            else:
                breakpoint()
                answer = input("a value? ")
            return self.fc(x)

    model = Misbehaving()
    inputs = torch.ones(2, 3)
    """
)


def _check_restored(ended: Ended) -> None:
    after = ended.after
    assert LEAVE_ALT_SCREEN in after and MOUSE_OFF in after and SHOW_CURSOR in after, after[-300:]
    assert ended.cooked, "the terminal was left in raw mode"
    # Once the app is gone (the screen itself may show the model's own traceback).
    printed = after[after.rindex(LEAVE_ALT_SCREEN):]
    assert b"Traceback" not in printed, printed[-600:]


def _model(tmp_path: Path) -> Path:
    model = tmp_path / "misbehaving.py"
    model.write_text(MISBEHAVING)
    return model


def test_a_model_closing_its_stdout_and_stderr_leaves_the_app_drawing_and_the_terminal_restored(tmp_path):
    """Textual drew on descriptor 2: the model closing it froze the screen, and the exit
    wrote nothing (the terminal stayed in the alternate screen, mouse reporting on)."""
    with PtyApp("open", _model(tmp_path), env={"HOOKTUI_TEST_MISBEHAVE": "close"}) as app:
        app.wait_for(rb"paused", 60)
        app.press("c")
        app.wait_for(rb"run finished", 60)  # drawn after the model closed 1 and 2
        ended = app.end(lambda: app.press("q"), within=60)
    assert app.process.returncode == 0, ended.after[-300:]
    _check_restored(ended)


def test_a_model_reading_stdin_or_calling_breakpoint_does_not_take_the_apps_keys(tmp_path):
    """breakpoint() is skipped and input() gets EOFError, each said on the screen; `q`
    quits at once (the model's read took it until a blind Enter)."""
    with PtyApp("open", _model(tmp_path), env={"HOOKTUI_TEST_MISBEHAVE": "read"}) as app:
        app.wait_for(rb"paused", 60)
        app.press("c")
        app.wait_for(rb"skipped", 60)  # breakpoint(): said where, and the model went on
        app.wait_for(rb"EOFError", 60)  # input(): said, and the model's error shown
        ended = app.end(lambda: app.press("q"), within=60)
    assert app.process.returncode == 0, ended.after[-300:]
    _check_restored(ended)


def _group_states(group: int) -> list[str]:
    """The state letter of every process in the process group `group`."""
    return [p.state for p in processes() if p.group == group]


def _wait_group(group: int, stopped: bool, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        states = _group_states(group)
        if states and all((state == "T") == stopped for state in states):
            return
        assert time.monotonic() < deadline, f"process group {group}: states {states}"
        time.sleep(0.02)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="watches the process group in /proc")
def test_sigstop_then_sigcont_then_q_leaves_the_terminal_cooked():
    """A job stopped and resumed (SIGSTOP, not the SIGTSTP Textual handles): Textual took
    the app's own raw mode as the one to restore at exit."""
    with PtyApp("open", "sample_models/seed.py") as app:
        app.wait_for(rb"paused", 60)
        time.sleep(0.3)  # let the first screen settle
        os.killpg(app.process.pid, signal.SIGSTOP)
        _wait_group(app.process.pid, stopped=True)
        os.killpg(app.process.pid, signal.SIGCONT)
        _wait_group(app.process.pid, stopped=False)
        ended = app.end(lambda: app.press("q"), within=60)
    assert app.process.returncode == 0, ended.after[-300:]
    _check_restored(ended)


def test_the_command_palette_survives_a_terminal_too_small_for_its_list():
    """ctrl+p, then a resize that leaves the palette's list no line, then pageup/pagedown:
    Textual's OptionList raised KeyError: 0 and the app crashed; then a query and a terminal
    narrowed column by column: ValueError. The page keys still page once there is room."""
    from textual.command import CommandList

    from hooktui.engine.run.loader import load_target
    from hooktui.engine.run.session import record
    from hooktui.ui.app import HooktuiApp

    loaded = load_target(Path(__file__).resolve().parents[2] / "sample_models" / "seed.py")
    trace = record(loaded.model, loaded.inputs, loaded.loss_fn)
    app = HooktuiApp(recorded=(trace.info, trace.events), show_timings=False)

    async def storm() -> tuple[int | None, int | None]:
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            await pilot.press("ctrl+p")
            await pilot.pause()
            for size in ((80, 3), (80, 1), (3, 3), (80, 2)):
                await pilot.resize_terminal(*size)
                await pilot.pause()
                await pilot.press("pagedown", "pageup", "pagedown")
                await pilot.pause()
                assert app.is_running and getattr(app, "_exception", None) is None
            # Narrower and narrower, a query typed: the list was laid out narrower than its
            # options' padding, and measuring an option raised ValueError (range() step 0).
            await pilot.resize_terminal(80, 22)
            await pilot.press("a")
            await pilot.pause()
            for width in range(30, 0, -1):
                await pilot.resize_terminal(width, 22)
                await pilot.pause()
            assert app.is_running and getattr(app, "_exception", None) is None
            await pilot.press("backspace")
            await pilot.resize_terminal(80, 24)
            commands = app.screen.query_one(CommandList)
            deadline = time.monotonic() + 30
            while commands.option_count < 5 or commands.highlighted is None:  # the palette lists every command
                assert time.monotonic() < deadline, "the palette listed no commands"
                await pilot.pause(0.05)
            before = commands.highlighted
            await pilot.press("pagedown")
            await pilot.pause()
            return before, commands.highlighted

    before, after = asyncio.run(storm())
    assert getattr(app, "_exception", None) is None
    assert after is not None and before is not None and after > before  # pagedown still pages


@pytest.mark.parametrize("columns", ["²", "٣٠"])
def test_a_size_variable_nothing_can_read_is_no_size(columns):
    """COLUMNS=² is a digit to `str.isdigit` and not to `int`: Rich, which checks the one and
    calls the other, raised ValueError as the app was made. Arabic-Indic digits (which `int`
    reads) are no size either: the terminal's own size is used, and the app draws at it."""
    with PtyApp("open", "sample_models/seed.py", size=(100, 30), env={"COLUMNS": columns, "LINES": columns}) as app:
        app.wait_for(rb"paused", 60)
        ended = app.end(lambda: app.press("q"), within=20)
    assert app.process.returncode == 0, ended.after[-600:]
    assert b"ValueError" not in app.text()
    _check_restored(ended)


def test_only_ascii_digit_sizes_are_kept():
    from hooktui.ui.terminal_driver import drop_unreadable_size

    environ = {"COLUMNS": "٣٠", "LINES": "24", "TERM": "xterm"}
    assert drop_unreadable_size(environ) == ["COLUMNS"]
    assert environ == {"LINES": "24", "TERM": "xterm"}
