"""hooktui.debug on a real terminal (a pseudo-terminal), in a plain `python script.py`: after
a step that ended the script goes on below the app, what the step printed shown after it;
`q` before a step ended stops the script with hooktui.Quit (status 1, one line, finally
blocks run, the terminal restored). `hooktui run` is driven by the pilot
(tests/loop/test_run_command.py)."""

from __future__ import annotations

from pty_run import LEAVE_ALT_SCREEN, ROOT, PtyApp

SCRIPT = """\
import os

import torch
from torch import nn
import hooktui


class Chatty(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 1)

    def forward(self, x):
        print("from python")
        os.write(1, b"from C\\n")  # below Python: straight to file descriptor 1
        return self.fc(x)


model = Chatty()
hooktui.debug(model, lambda: model(torch.ones(2, 3)).sum())
print("between")
try:
    hooktui.debug(model, lambda: model(torch.ones(2, 3)).sum())
finally:
    print("finally ran")
print("not reached")
"""


def test_a_plain_script_continues_after_the_app_then_q_raises_quit(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    app = PtyApp(script, python=True, cwd=tmp_path, env={"PYTHONPATH": str(ROOT)})
    try:
        app.wait_for(rb"paused", 60)
        app.press("c")
        app.wait_for(rb"step done", 60)
        app.press("q")  # the step ended: debug returns, the script goes on
        app.wait_for(rb"between[\s\S]*paused", 60)
        before = len(app.text())
        app.press("q")  # the second step not ended: hooktui.Quit
        app.wait_exit(60)
        text = app.text()
        cooked = app.terminal_cooked()
    finally:
        app.close()
    assert app.process.returncode == 1
    assert cooked, "the terminal was left in raw mode"
    first = text[text.index(LEAVE_ALT_SCREEN):before].decode()
    # What the step printed while the app drew, from Python and from below it, came after the app.
    assert "from python" in first and "from C" in first and first.index("from C") < first.index("between")
    last = text[before:]
    shown = last[last.index(LEAVE_ALT_SCREEN):].decode()
    second_call = SCRIPT.splitlines().index("    hooktui.debug(model, lambda: model(torch.ones(2, 3)).sum())") + 1
    assert "finally ran" in shown and f"hooktui: quit in the debugger at script.py:{second_call}" in shown
    assert "Traceback" not in shown and "not reached" not in shown
    assert list(tmp_path.iterdir()) == [script]  # a terminal: no trace file
    assert b"from C" not in text[: text.index(LEAVE_ALT_SCREEN)]  # never on top of the app
