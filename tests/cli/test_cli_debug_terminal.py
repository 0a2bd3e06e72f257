"""hooktui.debug on a real terminal (a pseudo-terminal): in a plain `python script.py`, `q`
ends the script with hooktui.Quit (status 1, one line, finally blocks run, the terminal
restored); under `hooktui run`, the script goes on after the app and prints below it."""

from __future__ import annotations

from pty_run import LEAVE_ALT_SCREEN, ROOT, PtyApp

SCRIPT = """\
import torch
from torch import nn
import hooktui

model = nn.Linear(3, 1)
try:
    hooktui.debug(model, lambda: model(torch.ones(2, 3)).sum())
finally:
    print("finally ran")
print("not reached")
"""


def test_q_in_a_plain_script_raises_quit(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    app = PtyApp(script, python=True, cwd=tmp_path, env={"PYTHONPATH": str(ROOT)})
    try:
        app.wait_for(rb"paused", 60)
        before = len(app.text())
        app.press("q")
        app.wait_exit(10)
        after = app.text()[before:]
        cooked = app.terminal_cooked()
    finally:
        app.close()
    assert app.process.returncode == 1
    assert cooked, "the terminal was left in raw mode"
    shown = after[after.index(LEAVE_ALT_SCREEN):].decode()
    assert "finally ran" in shown and "hooktui: quit in the debugger at script.py:7" in shown
    assert "Traceback" not in shown and "not reached" not in shown
    assert list(tmp_path.iterdir()) == [script]  # a terminal: no trace file


def test_hooktui_run_opens_the_app_at_the_debug_step_and_the_script_goes_on():
    app = PtyApp("run", "sample_models/train_loop.py", "--debug-step", "36", "--steps", "38")
    try:
        app.wait_for(rb"paused", 60)
        start = app.text()
        app.press("c")
        app.wait_for(rb"step done", 30)
        app.press("q")
        app.wait_exit(10)
        text = app.text()
    finally:
        app.close()
    assert app.process.returncode == 0
    assert b"step  30" in start[: start.index(b"\x1b[?1049h")]  # the steps before, printed before the app
    after = text[text.rindex(LEAVE_ALT_SCREEN):]
    assert b"step  36  lr 0.0463  loss nan" in after  # the script went on below the app
