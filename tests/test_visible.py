"""Control characters in record text are shown, never obeyed (hooktui/visible.py)."""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest

from hooktui.engine.records.records import ErrorRecord, Event, ModuleInfo, NodeRecord, SourceLocation, TensorRecord, TensorStats, TraceInfo
from hooktui.visible import has_control, visible, visible_block, visible_event, visible_info


def test_visible_escapes_control_characters():
    assert visible("a\x1b]0;t\x07b") == "a\\x1b]0;t\\x07b"
    assert visible("line\nnext\ttab") == "line\\x0anext\\x09tab"
    assert visible("\u202eexe\x9b") == "\\u202eexe\\x9b"
    assert visible("plain ünïcode ✓ [b]") == "plain ünïcode ✓ [b]"


def test_visible_block_keeps_lines():
    assert visible_block("one\r\ntwo\x1b[2J\tend") == "one\ntwo\\x1b[2J  end"


def _full_event() -> Event:
    """An event with every optional record and string filled in."""
    leaf = NodeRecord(name="leaf", saved={"k": "v"})
    return Event(
        index=0, phase="backward", hook="backward", module="m", module_type="T", call=0, grad_fn="g",
        tensors=[TensorRecord(name="n", shape=[1], dtype="d", device="c", grad_fn="g", target="t",
                              stats=TensorStats(count=1), missing="x", note="y")],
        source=SourceLocation(filename="f", lineno=1, function="fn", line="l"),
        node=NodeRecord(name="root", next=[leaf, None], saved={"s": [1], "t": "text"}),
        notes=["note"], error=ErrorRecord(type="E", message="msg", traceback="tb"),
    )


def _string_paths(value, path=()):
    """Every place in a record that holds a string (dict keys included)."""
    if isinstance(value, str):
        yield path
    elif dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            yield from _string_paths(getattr(value, f.name), (*path, f.name))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _string_paths(item, (*path, i))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield (*path, ("key", key))
            yield from _string_paths(item, (*path, key))


def _poison(event: Event, path) -> Event:
    event = copy.deepcopy(event)
    holder = event
    for part in path[:-1]:
        holder = holder[part] if isinstance(holder, (list, dict)) else getattr(holder, part)
    last = path[-1]
    if isinstance(last, tuple):  # a dict key
        holder[last[1] + "\x1b"] = holder.pop(last[1])
    elif isinstance(holder, (list, dict)):
        holder[last] += "\x1b"
    else:
        setattr(holder, last, getattr(holder, last) + "\x1b")
    return event


def test_every_string_of_an_event_is_made_visible():
    """The fast check in visible_event must look at every string: poison each in turn."""
    clean = _full_event()
    assert visible_event(clean) is clean
    paths = list(_string_paths(clean))
    assert len(paths) > 25
    for path in paths:
        poisoned = _poison(clean, path)
        shown = visible_event(poisoned)
        assert shown is not poisoned, f"{path}: a control character there is not caught"
        assert "\\u001b" not in json.dumps(dataclasses.asdict(shown)), path
        assert "\\u001b" in json.dumps(dataclasses.asdict(poisoned))  # the engine's record is left alone


def test_trace_info_is_made_visible():
    info = TraceInfo(model="m\x1b", modules=[ModuleInfo("a\x07", "T\x9b", {"w\x1b": [1]})], loss="l\x00")
    shown = visible_info(info)
    assert not any(has_control(s) for s in (shown.model, shown.loss, shown.modules[0].name, shown.modules[0].type, *shown.modules[0].params))


@pytest.mark.parametrize("field", ["message", "traceback"])
def test_error_text_keeps_its_lines(field):
    event = _full_event()
    setattr(event.error, field, "first\nsecond\x1b[2J")
    assert getattr(visible_event(event).error, field) == "first\nsecond\\x1b[2J"


@pytest.mark.parametrize("char", ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u061c", "\u00ad", "\u180e"])
def test_what_draws_nothing_is_made_visible(char):
    """`fc\\u200b1` must not look like `fc1` (issue 24)."""
    shown = visible(f"fc{char}1")
    escape = f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"
    assert char not in shown and shown == f"fc{escape}1"
    assert has_control(f"fc{char}1")


def test_emoji_joined_by_zwj_take_the_cells_they_are_counted_for():
    """A ZWJ sequence draws as one 2-cell glyph where Rich counts 4 cells, shifting every
    column after it at 80x24; shown with its joiner escaped, each emoji is its own glyph."""
    from rich.cells import cell_len

    family = "\U0001F469\u200d\U0001F4BB"
    shown = visible(f"{family}|")
    assert "\u200d" not in shown
    assert cell_len(shown) == 2 + len("\\u200d") + 2 + 1
