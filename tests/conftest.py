"""Shared fixtures. Environment variables that change Textual's output are cleared
before Textual is imported anywhere, so snapshots do not depend on the terminal."""

import os

for _var in ("NO_COLOR", "TEXTUAL_THEME", "FORCE_COLOR", "TEXTUAL_ANIMATIONS"):
    os.environ.pop(_var, None)
os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_models"


@pytest.fixture
def samples() -> Path:
    return SAMPLES
