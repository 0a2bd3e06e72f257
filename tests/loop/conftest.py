"""Every test here starts outside torchrun and with no HOOKTUI_* settings: a developer's
environment must not decide where a debugged step goes."""

import pytest


@pytest.fixture(autouse=True)
def _no_launcher_env(monkeypatch, tmp_path):
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "HOOKTUI_RANK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOOKTUI_DIR", str(tmp_path))
