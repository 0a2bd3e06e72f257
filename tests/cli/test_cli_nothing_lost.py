"""Nothing lost (issue 24): an interrupted or failed `trace --save` never replaces a previous
file; a stdout that fails is named as such, never as the model's error; Ctrl+C is one line
and exit 130; a process the model forks never writes the parent's trace."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from cli_run import ROOT, SAMPLES

SEED = SAMPLES / "seed.py"
SLOW = ROOT / "tests" / "cli" / "slow_models.py"
OLD = b'{"an": "old file, to be kept"}\n'


def _env() -> dict:
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}


def _start(*args, stdout=subprocess.PIPE) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "hooktui", *map(str, args)], cwd=ROOT, env=_env(), stdin=subprocess.DEVNULL,
                            stdout=stdout, stderr=subprocess.PIPE)


def test_ctrl_c_during_trace_keeps_the_old_save_and_says_one_line(tmp_path):
    saved = tmp_path / "prev.jsonl"
    saved.write_bytes(OLD)
    process = _start("trace", SLOW, "--save", saved)
    deadline = time.monotonic() + 120
    seen = b""
    while b"entering the slow forward" not in seen:  # the model's print goes to stderr
        assert time.monotonic() < deadline and process.poll() is None, seen
        seen += os.read(process.stderr.fileno(), 4096)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    err = (seen + err).decode()
    assert process.returncode == 130, err
    assert saved.read_bytes() == OLD
    assert os.listdir(tmp_path) == ["prev.jsonl"]  # no temporary file left
    assert "interrupted" in err and "raised" not in err and "KeyboardInterrupt" not in err, err
    assert err.strip().splitlines()[-1].startswith("hooktui: interrupted")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("mode", [["--json"], []], ids=["json", "table"])
def test_a_full_stdout_is_named_and_nothing_is_saved(tmp_path, mode):
    saved = tmp_path / "run.jsonl"
    saved.write_bytes(OLD)
    with open("/dev/full", "w") as full:
        process = _start("trace", SEED, *mode, "--save", saved, stdout=full)
        _, err = process.communicate(timeout=180)
    err = err.decode()
    assert process.returncode not in (0, 130), err
    lines = err.strip().splitlines()
    assert lines[-1].startswith("hooktui: cannot write to standard output: No space left on device"), err
    assert "Traceback" not in err and "raised during" not in err and "model" not in lines[-1], err
    assert saved.read_bytes() == OLD


FORKING = textwrap.dedent(
    """
    import os, sys
    import torch
    from torch import nn

    class Forking(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.fc = nn.Linear(3, 1)

        def forward(self, x):
            if os.getpid() == PARENT and not getattr(self, "forked", False):
                self.forked = True
                child = os.fork()
                if child == 0:
                    sys.exit(0)  # unwinds through hooktui in the child
                os.waitpid(child, 0)
            return self.fc(x)

    PARENT = os.getpid()
    model = Forking()
    inputs = torch.ones(2, 3)
    """
)


def test_a_forked_child_never_writes_the_parents_save(tmp_path):
    model = tmp_path / "forking.py"
    model.write_text(FORKING)
    saved = tmp_path / "run.jsonl"
    process = _start("trace", model, "--json", "--save", saved)
    out, err = process.communicate(timeout=180)
    assert process.returncode == 0, err.decode()
    assert "hooktui:" not in err.decode()  # the child said nothing of hooktui's (no "raised during forward: SystemExit")
    lines = saved.read_text().splitlines()
    assert len(lines) > 3  # the header and the parent's firings, not the child's one record
    assert len(out.decode().splitlines()) == len(lines) - 1  # every firing printed once: the child printed none


def test_debug_in_a_forked_child_leaves_the_parents_trace(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        textwrap.dedent(
            """
            import os, sys
            import torch
            from torch import nn
            import hooktui

            torch.manual_seed(0)
            model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
            x = torch.ones(2, 3)
            parent = os.getpid()

            def step():
                out = model(x)
                if os.getpid() == parent:
                    child = os.fork()
                    if child == 0:
                        sys.exit(0)  # the child unwinds through hooktui.debug
                    os.waitpid(child, 0)
                return out.sum()

            hooktui.debug(model, step)
            """
        )
    )
    env = {**_env(), "HOOKTUI_DIR": str(tmp_path)}
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=180)
    assert result.returncode == 0, result.stderr
    traces = sorted(tmp_path.glob("hooktui-*.jsonl"))
    assert len(traces) == 1, traces
    assert len(traces[0].read_text().splitlines()) > 3, result.stderr
    assert result.stderr.count("recorded the step") == 1, result.stderr


def test_view_and_diff_read_back_trace_json_that_stopped(tmp_path):
    """hooktui reads its own output: `trace --json --stop-at-nonfinite > s.jsonl` then diff."""
    out = tmp_path / "s.jsonl"
    with open(out, "w") as stream:
        process = _start("trace", SAMPLES / "nan_hunt.py", "--json", "--stop-at-nonfinite", stdout=stream)
        _, err = process.communicate(timeout=180)
    assert process.returncode == 3, err.decode()
    assert '"stopped"' in out.read_text().splitlines()[-1]
    result = subprocess.run([sys.executable, "-m", "hooktui", "diff", str(out), str(out)], cwd=ROOT, env=_env(),
                            capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
