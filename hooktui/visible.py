"""Text from a record, made safe to put on a terminal.

A trace file may come from a stranger, and a live model names its own modules and writes
its own error messages: any of those strings can carry an escape sequence that sets the
terminal title, writes the clipboard (OSC 52) or leaves the alternate screen. Every string
from a record is shown through `visible()` (one line) or `visible_block()` (keeps line
breaks): control characters become their Python escapes (`\\x1b`), so they are seen, not
obeyed. Bidi overrides and line separators are made visible too: they reorder or break
what is on screen.

No Textual, no torch: the CLI table and the app share it.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from .engine.records.records import Event, LazyTensorRecord, TraceInfo

# C0 controls, DEL and C1 controls; bidi marks (U+061C, U+200E, U+200F), embeddings,
# overrides and isolates; the Unicode line and paragraph separators; and what draws nothing:
# the soft hyphen, zero-width space, non-joiner and joiner (`fc\u200b1` would look like `fc1`;
# a ZWJ joins emoji into one glyph of fewer cells than counted, shifting every column after
# it), the word joiner and invisible operators, the Mongolian vowel separator, the BOM. And
# lone UTF-16 surrogates (a JSON "\udcff", Python's stand-in for an undecodable byte of a
# file name): no encoding can write one, so printing it would crash.
_INVISIBLE = "\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\u2028\u2029\ufeff\ud800-\udfff"
_CONTROL = re.compile(f"[\x00-\x1f\x7f-\x9f{_INVISIBLE}]")
_CONTROL_BUT_LINES = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_INVISIBLE}]")


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` on one line with every control character shown as its escape."""
    return _CONTROL.sub(_escape, text) if _CONTROL.search(text) else text


def visible_block(text: str) -> str:
    """Like `visible`, keeping line breaks (tracebacks, multi-line messages); tabs become spaces."""
    text = text.replace("\r\n", "\n")
    if _CONTROL_BUT_LINES.search(text):
        text = _CONTROL_BUT_LINES.sub(_escape, text)
    return text.expandtabs(4)


def has_control(text: str) -> bool:
    return _CONTROL.search(text) is not None


# Record fields whose text may span lines; every other string is shown on one line.
MULTILINE_FIELDS = frozenset({"message", "traceback", "notes"})


def visible_event(event: Event) -> Event:
    """`event` with every string made visible: the same object when it is clean (checked
    in one pass over its strings, cheap enough for every firing of a live run)."""
    return event if not _CONTROL.search("".join(_event_strings(event))) else visible_record(event)


def visible_info(info: TraceInfo) -> TraceInfo:
    return visible_record(info)


def _event_strings(event: Event) -> list[str]:
    out = [event.phase, event.hook, event.module, event.module_type, event.grad_fn or "", *event.notes]
    for t in event.tensors:
        out += (t.name, t.dtype or "", t.device or "", t.grad_fn or "", t.target or "", t.missing or "", t.note or "")
        # A live record's summary is not computed for this: its only text (`of`) is
        # hooktui's own word.
        if not isinstance(t, LazyTensorRecord) and t.stats is not None:
            out.append(t.stats.of)
    if event.source is not None:
        out += (event.source.filename, event.source.function, event.source.line)
    if event.error is not None:
        out += (event.error.type, event.error.message, event.error.traceback)
    if event.user_hook is not None:
        call, hook = event.user_hook, event.user_hook.hook
        out += (call.returned, call.error or "", *call.changes, hook.kind, hook.owner, hook.function)
        out += (hook.filename or "", hook.module or "", hook.registered_at or "", *hook.flags)
    names = getattr(event.node, "names", None)
    if names is not None:
        # A live record not built yet: its node names are its only text (saved keys and
        # values are PyTorch's attribute names and hooktui's own words).
        out += names()
        return out
    stack = [event.node]
    while stack:
        node = stack.pop()
        if node is not None:
            out.append(node.name)
            for key, value in node.saved.items():
                out.append(key)
                if isinstance(value, str):
                    out.append(value)
            stack.extend(node.next)
    return out


def visible_record(record: Any, multiline: bool = False) -> Any:
    """`record` (a record dataclass, list, dict or string) with every string made visible.

    Returns the same object when nothing needed escaping (the usual case), else a copy:
    the engine's own records are never changed."""
    if isinstance(record, str):
        return visible_block(record) if multiline else visible(record)
    if isinstance(record, list):
        if not record or isinstance(record[0], (int, float)):  # shapes, values, histograms
            return record
        items = [visible_record(item, multiline) for item in record]
        return record if all(a is b for a, b in zip(items, record, strict=True)) else items
    if isinstance(record, dict):
        pairs = [(visible_record(k), visible_record(v, multiline)) for k, v in record.items()]
        same = all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(pairs, record.items(), strict=True))
        return record if same else dict(pairs)
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        changes = {}
        for field in dataclasses.fields(record):
            value = getattr(record, field.name)
            if value is None or isinstance(value, (bool, int, float)):
                continue
            new = visible_record(value, field.name in MULTILINE_FIELDS)
            if new is not value:
                changes[field.name] = new
        return dataclasses.replace(record, **changes) if changes else record
    return record
