"""Untrusted text at the command line: `view` refuses a bad trace with exit 2 and one line,
opens a hostile one on a real terminal without passing on a single escape sequence, and the
`trace` table shows a model's escape-laden module name as text."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

import hostile
from cli_run import hooktui
from pty_run import PtyApp

HERE = Path(__file__).resolve().parent


@pytest.mark.parametrize(
    "content, message",
    [
        pytest.param('{"format": "hooktui-trace", "version": 1, "info": {"model": "m", "modules": [], "loss": "l"}}\n{"index": "0"}\n', ":2: index: expected an integer", id="bad-field"),
        pytest.param('{"format": "hooktui-trace", "version": 1, "info": {"model": "m", "modules": [], "loss": "l"}}\n' + "[" * 100_000 + "\n", ":2: JSON nested too deeply", id="deep"),
    ],
)
def test_view_refuses_a_bad_trace_with_one_line_and_exit_2(tmp_path, content, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    result = hooktui("view", path)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


@pytest.mark.parametrize("target, message", [("/dev/zero", "not a regular file"), (HERE, "is a folder")])
def test_view_refuses_what_is_not_a_file(target, message):
    result = hooktui("view", target)
    assert result.returncode == 2 and message in result.stderr


def test_view_of_a_hostile_trace_sends_no_escape_sequence_to_the_terminal(tmp_path):
    path = hostile.write(tmp_path / "evil.jsonl")
    app = PtyApp("view", path, size=(120, 40))
    try:
        app.wait_for(rb"replay", 60)
        for key in "xvaotnnn":
            app.press(key)
            time.sleep(0.2)
        app.wait_for(rb"the model raised", 60)  # the error firing's window
        mark = len(app.text())
        app.press("\x1b")
        time.sleep(0.3)  # escape then q at once would read as alt+q:
        deadline = time.monotonic() + 60
        while len(app.text()) == mark:  # the app read it and drew the window's closing
            assert time.monotonic() < deadline and app.process.poll() is None, "escape was not read"
            time.sleep(0.05)
        app.press("q")
        app.wait_exit(60)
        assert app.process.returncode == 0
    finally:
        app.close()
    output = app.text()
    for raw in hostile.RAW:
        assert raw not in output, f"{raw!r} reached the terminal"
    assert b"\\x1b]0;pwned-title\\x07" in output  # shown, as text
    # The only operating-system commands on the wire are Textual's own (OSC 22: pointer shape).
    assert set(re.findall(rb"\x1b\](\d*)", output)) <= {b"22"}


def test_trace_table_shows_a_module_name_with_escapes_as_text():
    table = hooktui("trace", HERE / "evil_model.py")
    assert table.returncode == 0, table.stderr
    assert "\x1b" not in table.stdout and "fc\\x1b]0;pwned-title\\x07" in table.stdout
