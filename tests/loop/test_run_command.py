"""`hooktui run SCRIPT.py ARGS`: the script runs as `python SCRIPT.py ARGS` would, the app
opens where it calls hooktui.debug, and after the app the script goes on exactly as
without hooktui (sample_models/train_loop.py, AdamW and a warmup schedule)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from hooktui.cli import main
from hooktui.ui.widgets.timeline import nonfinite
from loop_helpers import SAMPLES, quit_at_first_pause, use_pilot, wait_for

TRAIN_LOOP = SAMPLES / "train_loop.py"


def _plain_log(steps: int) -> list[str]:
    """The script's log without hooktui (its train() called directly)."""
    spec = importlib.util.spec_from_file_location("train_loop_plain", TRAIN_LOOP)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    lines: list[str] = []
    module.train(steps, log=lines.append)
    return lines


def test_debug_step_in_the_app_then_the_script_goes_on_as_without_hooktui(monkeypatch, capsys):
    seen = {}

    async def script(pilot):
        app = pilot.app
        await wait_for(pilot, lambda: app.state == "paused", "the first pause")
        await pilot.press("c")
        await wait_for(pilot, lambda: app.state == "finished", "the end of step 36")
        seen["title"] = app.title
        seen["nan"] = [e.module for e in app.history.events if nonfinite(e)]
        await pilot.press("q")

    use_pilot(monkeypatch, script)
    argv = list(sys.argv)
    assert main(["run", str(TRAIN_LOOP), "--debug-step", "36", "--steps", "38"]) == 0
    assert sys.argv == argv  # the script's argv was its own, and is put back
    assert "train_loop.py" in seen["title"]
    # Step 36 is the one whose loss is NaN: its first non-finite firing is the criterion's output.
    assert seen["nan"][0] == "criterion"
    printed = capsys.readouterr().out.splitlines()
    assert printed == _plain_log(38)
    assert printed[-1].startswith("step  36") and printed[-1].endswith("nan")


def test_q_ends_the_script_with_status_0(monkeypatch, capsys):
    use_pilot(monkeypatch, quit_at_first_pause)
    assert main(["run", str(TRAIN_LOOP), "--debug-step", "1", "--steps", "5"]) == 0
    captured = capsys.readouterr()
    assert "hooktui: quit in the debugger at train_loop.py:" in captured.err
    assert captured.out.splitlines() == _plain_log(1)  # step 0 ran, step 1 was stopped


def test_the_scripts_own_errors_and_exit_codes(tmp_path, capsys):
    failing = tmp_path / "failing.py"
    failing.write_text("import sys\nprint(sys.argv[1:])\nraise RuntimeError('bad batch')\n")
    assert main(["run", str(failing), "--lr", "3"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "['--lr', '3']\n"  # the script's options are its own, not hooktui's
    assert "RuntimeError: bad batch" in captured.err and f'File "{failing}", line 3' in captured.err
    assert "runpy" not in captured.err and "commands/run.py" not in captured.err

    exits = tmp_path / "exits.py"
    exits.write_text("import sys\nsys.exit(7)\n")
    assert main(["run", str(exits)]) == 7


@pytest.mark.parametrize("target,message", [("missing.py", "no such file"), (".", "is a folder")])
def test_a_missing_script_is_one_message(target, message, capsys):
    assert main(["run", target]) == 2
    assert message in capsys.readouterr().err


GUARDED = """\
import torch
from torch import nn
import hooktui

class NaiveLogSigmoid(nn.Module):
    def forward(self, x):
        return torch.log(torch.sigmoid(x))  # sigmoid(-2e4) is 0 in float32: log(0) = -Inf


model = nn.Sequential(nn.Linear(2, 2), NaiveLogSigmoid())
with torch.no_grad():
    model[0].weight.fill_(-1e4)
with hooktui.guard(model):
    model(torch.ones(1, 2)).sum().backward()
"""


def test_under_hooktui_run_a_guard_opens_the_app_where_it_stops(monkeypatch, tmp_path, capsys):
    script = tmp_path / "guarded.py"
    script.write_text(GUARDED)
    seen = []

    async def look(pilot):
        app = pilot.app
        await wait_for(pilot, lambda: app.current is not None, "the first render")
        seen.append((app.current.module, app.current.hook))
        await pilot.press("q")

    use_pilot(monkeypatch, look)
    monkeypatch.setenv("HOOKTUI_DIR", str(tmp_path))
    # `q` there ends the script with status 0 and one line (the README), as after hooktui.debug.
    assert main(["run", str(script)]) == 0
    assert seen == [("1", "forward")]  # NaiveLogSigmoid's output, where the -Inf was born
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hooktui: quit in the debugger at ") and "firing #" in err[0]
    # The line the step was on, then the guard's `with` line (it cited only the `with` line).
    lines = GUARDED.splitlines()
    step_line = 1 + lines.index("    model(torch.ones(1, 2)).sum().backward()")
    with_line = 1 + lines.index("with hooktui.guard(model):")
    assert err[0].startswith(f"hooktui: quit in the debugger at guarded.py:{step_line} (the guard of guarded.py:{with_line}), step 0"), err


def test_a_guard_error_under_hooktui_run_shows_the_scripts_frames_only(tmp_path, capsys, monkeypatch):
    """No app (no terminal): the NonFiniteError is the script's error, status 1, its
    traceback without the torch and hooktui frames between the script and the hook."""
    script = tmp_path / "guarded.py"
    script.write_text(GUARDED)
    monkeypatch.setenv("HOOKTUI_DIR", str(tmp_path))
    assert main(["run", str(script)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):\n")
    assert f'File "{script}", line 14' in err  # the guarded forward call in the script
    assert "torch/nn/modules" not in err and "hooktui/engine" not in err
    assert "frames of torch and hooktui left out" in err
    assert "hooktui.NonFiniteError: hooktui.guard: step 0" in err
