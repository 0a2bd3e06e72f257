"""The model's own prints never mix into hooktui's output: `trace --json` stays pure JSON
lines on stdout, the prints go to stderr (the app's case: tests/cli/test_cli_quit.py)."""

from __future__ import annotations

import json
from pathlib import Path

import hostile
from cli_run import hooktui

HERE = Path(__file__).resolve().parent


def test_json_stays_json_when_the_model_prints():
    result = hooktui("trace", HERE / "evil_model.py", "--json")
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]  # every line is JSON
    assert {r["module"] for r in records} == {"", "fc" + hostile.TITLE}
    # Not lost: on stderr.
    assert "model print in forward" in result.stderr and "hook print" in result.stderr
    # The printed text itself never reaches stdout (the hook's own source line, quoted in
    # a record, may mention print).
    assert "model print in forward" not in result.stdout and "\nhook print" not in result.stdout


def test_the_table_keeps_model_prints_on_stderr():
    result = hooktui("trace", HERE / "evil_model.py")
    assert result.returncode == 0, result.stderr
    assert "model print in forward" in result.stderr and "model print" not in result.stdout
