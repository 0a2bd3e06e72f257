"""A guard's error in a plain `python train.py`: the traceback Python prints ends at the
user's line, not under a dozen frames of torch's module call and hooktui's tracer; it says
how many frames it left out, and HOOKTUI_TRACEBACK=1 keeps them all."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import torch

import hooktui

SCRIPT = textwrap.dedent(
    """
    import torch, hooktui
    from torch import nn

    class NaiveLogSigmoid(nn.Module):
        def forward(self, x):
            return torch.log(torch.sigmoid(x))  # log(0) = -Inf in float32

    model = nn.Sequential(nn.Linear(2, 2), NaiveLogSigmoid())
    with torch.no_grad():
        model[0].weight.fill_(-1e4)
    with hooktui.guard(model):
        model(torch.ones(1, 2)).sum().backward()
    """
)
INTERNAL = (str(Path(torch.__file__).parent), str(Path(hooktui.__file__).parent))


def _run(tmp_path: Path, **env) -> list[str]:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}, "HOOKTUI_DIR": str(tmp_path), **env}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=180)
    assert done.returncode == 1, done.stderr
    return done.stderr.splitlines()


def test_a_guards_traceback_ends_at_the_users_line(tmp_path):
    err = _run(tmp_path)
    frames = [line for line in err if line.startswith('  File "')]
    step_line = 1 + SCRIPT.splitlines().index("    model(torch.ones(1, 2)).sum().backward()")
    assert frames == [f'  File "{tmp_path / "train.py"}", line {step_line}, in <module>'], err
    assert any(line.startswith("hooktui.NonFiniteError: hooktui.guard: step 0") for line in err), err
    left_out = next(line for line in err if "frames of torch and hooktui left out" in line)
    kept = [line for line in _run(tmp_path, HOOKTUI_TRACEBACK="1") if line.startswith('  File "')]
    internal = [line for line in kept if any(root in line for root in INTERNAL)]
    assert len(internal) >= 5 and left_out.startswith(f"({len(internal)} frames"), (left_out, kept)
