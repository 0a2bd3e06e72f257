"""Every test here starts outside torchrun, with trace files in its own folder."""

import pytest


@pytest.fixture(autouse=True)
def _no_launcher_env(monkeypatch, tmp_path):
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "HOOKTUI_RANK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOOKTUI_DIR", str(tmp_path))
