"""scripts/install_torch.sh (what `make install` runs), with a fake venv and fake tools:
the CPU index where there is no NVIDIA GPU, a quick fallback to the default index when that
index cannot be reached, the default index on a GPU box, and an existing torch untouched."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "install_torch.sh"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def _tool(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def run(tmp_path: Path, *, has_torch: bool = False, gpu: bool = False, cpu_index_works: bool = False) -> list[str]:
    """Run the script; returns the pip command lines it ran."""
    venv, tools, log = tmp_path / "bin", tmp_path / "tools", tmp_path / "pip.log"
    venv.mkdir()
    tools.mkdir()
    _tool(venv / "python", f"exit {0 if has_torch else 1}\n")
    # pip logs its arguments; the CPU index "cannot be reached" unless told otherwise.
    fail = "" if cpu_index_works else f'case "$*" in *{CPU_INDEX}*) exit 1;; esac\n'
    _tool(venv / "pip", f'echo "$*" >> {log}\n{fail}exit 0\n')
    if gpu:
        _tool(tools / "nvidia-smi", 'echo "GPU 0: NVIDIA H100 (UUID: GPU-0)"\n')
    env = {**os.environ, "PATH": f"{tools}:/usr/bin:/bin"}
    result = subprocess.run(["sh", str(SCRIPT), str(venv), "torch==2.13.0"], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return log.read_text().splitlines() if log.exists() else []


def test_no_gpu_uses_the_cpu_index_with_a_short_timeout(tmp_path):
    calls = run(tmp_path, cpu_index_works=True)
    assert calls == [f"install --quiet --timeout 5 --retries 0 --index-url {CPU_INDEX} torch==2.13.0"]


def test_an_unreachable_cpu_index_falls_back_to_the_default_index(tmp_path):
    calls = run(tmp_path)  # the fake pip fails at once: no retries, no wait (run's timeout: a safety net)
    assert len(calls) == 2 and CPU_INDEX in calls[0]
    assert calls[1] == "install --quiet torch==2.13.0"


def test_a_gpu_box_uses_the_default_index(tmp_path):
    assert run(tmp_path, gpu=True) == ["install --quiet torch==2.13.0"]


@pytest.mark.parametrize("gpu", [False, True])
def test_an_installed_torch_is_kept(tmp_path, gpu):
    assert run(tmp_path, has_torch=True, gpu=gpu) == []


def test_make_install_uses_the_script():
    assert "scripts/install_torch.sh" in (ROOT / "Makefile").read_text()
