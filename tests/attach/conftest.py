"""The attach tests: each gets its own folder of armed processes (XDG_RUNTIME_DIR)."""

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(autouse=True)
def _own_runtime_dir(monkeypatch, tmp_path):
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "HOOKTUI_RANK"):
        monkeypatch.delenv(name, raising=False)
    os.chmod(runtime, 0o700)
