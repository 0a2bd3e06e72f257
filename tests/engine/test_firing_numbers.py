"""Firing numbers with sub-numbers (Event.sub, issue 25.9): how they are written, read back,
parsed and found. The app-level check (a plain record's numbers survive `s`) is
tests/ui/test_ui_firing_numbers.py."""

from __future__ import annotations

import json

from hooktui.engine.records.records import Event, TraceInfo, parse_firing_number, position_of
from hooktui.engine.records.trace_file import read_trace, write_trace


def firing(index: int, sub: int = 0, hook: str = "backward_pre") -> Event:
    return Event(index=index, phase="backward", hook=hook, module="fc", module_type="Linear", call=0, sub=sub)


def test_a_plain_firing_is_written_as_before_and_a_stepped_one_keeps_its_sub_number(tmp_path):
    assert "sub" not in firing(3).to_dict()
    events = [firing(3), firing(3, 1, "node_pre"), firing(3, 2, "node"), firing(4, 0, "param_grad")]
    path = tmp_path / "t.jsonl"
    write_trace(path, TraceInfo(model="m", modules=[], loss="sum"), events)
    lines = path.read_text().splitlines()[1:]
    assert ["sub" in json.loads(line) for line in lines] == [False, True, True, False]
    _, loaded = read_trace(path)
    assert [(e.index, e.sub, e.number) for e in loaded] == [(3, 0, "3"), (3, 1, "3.1"), (3, 2, "3.2"), (4, 0, "4")]


def test_numbers_are_parsed_and_found_by_number_not_position():
    assert parse_firing_number("#39") == (39, 0)
    assert parse_firing_number(" 39.2 ") == (39, 2)
    assert [parse_firing_number(text) for text in ("", "x", "39.", ".1", "3.9.1", "-1")] == [None] * 6
    # A trace that skips numbers (legacy firings left out) and holds stepped firings.
    events = [firing(0), firing(2), firing(2, 1, "node_pre"), firing(2, 2, "node"), firing(5)]
    assert [position_of(events, *e.key) for e in events] == [0, 1, 2, 3, 4]
    assert position_of(events, 1) is None and position_of(events, 2, 3) is None and position_of(events, 6) is None
