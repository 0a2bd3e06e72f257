"""Trace files, issue 35: the header line may be as long as what hooktui writes for a very
wide model (its own limit, larger than other lines'), and no longer; line numbers are ASCII
digits; lone surrogates are shown as text."""

from __future__ import annotations

import json

import pytest

from hooktui.engine.records import trace_file
from hooktui.engine.records.records import ModuleInfo, TraceInfo, parse_firing_number
from hooktui.engine.records.trace_file import TraceFileError, read_trace_file, write_trace
from hooktui.visible import visible


def _header(modules: int) -> TraceInfo:
    return TraceInfo("wide.py", [ModuleInfo("", "Wide")] + [ModuleInfo(f"blocks.{i}", "Linear", {"weight": [1, 1]})
                                                         for i in range(modules)], "sum")


def test_the_header_has_its_own_limit_and_other_lines_keep_theirs(tmp_path, monkeypatch):
    monkeypatch.setattr(trace_file, "LINE_MAX", 1 << 20)
    monkeypatch.setattr(trace_file, "HEADER_LINE_MAX", 4 << 20)
    path = tmp_path / "wide.jsonl"
    write_trace(path, _header(30_000), [])  # a header of about 2 MiB: past LINE_MAX, within the header's
    with open(path, "rb") as stream:
        size = len(stream.readline())
    assert (1 << 20) < size < (4 << 20)
    assert len(read_trace_file(path).info.modules) == 30_001
    write_trace(path, _header(70_000), [])  # past the header's own limit: refused in one line
    with pytest.raises(TraceFileError, match=r"wide.jsonl:1: line longer than 4 MiB, more than a header line may hold"):
        read_trace_file(path)
    write_trace(path, _header(3), [])
    with open(path, "a") as out:
        out.write(json.dumps({"index": 0, "module": "x" * (2 << 20)}) + "\n")
    with pytest.raises(TraceFileError, match=r":2: line longer than 1 MiB, more than a trace line may hold"):
        read_trace_file(path)


@pytest.mark.parametrize("digit", ["\u00b2", "\u2460", "\u0663", "\uff11"])
def test_a_line_number_in_unicode_digits_is_refused(tmp_path, digit):
    header = {"format": "hooktui-trace", "version": 1, "info": {"model": "m", "modules": [], "loss": "l"},
              "sources": {"m.py": {digit: "x = 1"}}}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(header) + "\n")
    with pytest.raises(TraceFileError, match=r"t.jsonl:1: header: sources\['m.py'\]\[.*\]: expected a line number"):
        read_trace_file(path)
    assert parse_firing_number("#" + digit) is None and parse_firing_number("3." + digit) is None


def test_lone_surrogates_are_shown_as_their_escapes():
    shown = visible("fc\udcff" + "\ud800")
    assert shown == "fc\\udcff\\ud800"
    shown.encode("utf-8")  # printable: no UnicodeEncodeError
