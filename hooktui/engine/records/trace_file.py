"""Trace files: JSON lines, a header line then one event per line. Plain JSON only
(never pickle): a trace may come from someone else.

Reading treats the file as hostile. A line is read only up to LINE_MAX bytes (the first,
a header, HEADER_LINE_MAX), then msgspec
decodes it, in C, straight into the typed, bounded structs below (one annotated field per
record field: its type, its range, its length; unknown fields refused), and only then are
the records built from them. A block of values must be exactly as long as its shape says,
so nothing is ever allocated from a size the file merely claims. A line msgspec refuses
is explained once, in words, by walking the same typed schema over the line (`_explain`):
one TraceFileError naming the line and the field, as `run.jsonl:7: tensors[0].stats.min:
expected a number, got the string 'abc'`. (Control characters in strings are allowed
here; whoever shows them makes them visible: hooktui/visible.py.)

Adding a field to a record: give it a default in records.py and one line, in the same
place, in its struct below (the module refuses to import until the two agree).

Notes were sentences before they had kinds (records.Note): a note is still written as its
text, and the sentences the engine writes are given their kind here, once, as a line is
read (`notes.typed`).

Writing is atomic: a temporary file in the same folder, then a rename over the target, so
a full disk or a crash leaves any previous file as it was.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import stat
import tempfile
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Annotated, Any, Literal, Union

import msgspec
from msgspec import Meta, Struct
from msgspec.structs import astuple

from . import notes as note_kinds
from .firing import HOOK_KINDS
from .ranks import RANK_MAX
from .records import PHASES, ErrorRecord, Event, LayoutRecord, ModuleInfo, NodeRecord, SourceLocation, TensorRecord, TensorStats, TraceInfo
from .source_lines import lines_near
from .user_hook_records import KIND_TEXT, UserHookCall, UserHookInfo

FORMAT = "hooktui-trace"
VERSION = 1

# -- limits on what a file may make the reader do -------------------------------------------
LINE_MAX = 8 << 20  # bytes in one line
# bytes in the first line (the header: every module's name, type and parameter shapes, and
# the stored source lines). hooktui writes about 80 bytes a module: 15.7 MB for 200,000
# modules, some 80 MB for MODULES_MAX; this leaves room for long names and many parameters.
HEADER_LINE_MAX = 256 << 20
NAME_MAX = 1_000  # characters in a name: module, type, tensor, dtype, device, node
TEXT_MAX = 20_000  # characters in a note, a message, a source line, a label
TRACEBACK_MAX = 200_000
PATH_MAX = 4_096
# JSON integers longer than this are refused before Python parses them (Python's int() of a long
# digit string is quadratic). msgspec parses numbers in C, in one pass: it refuses an integer
# past 2**64 where the schema wants an integer, and reads a long one as a float where it wants a
# number (refused past a float's range); a line it refuses is parsed by Python with this limit.
INT_DIGITS_MAX = 20
INT_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1
DIMS_MAX = 64  # dimensions of a shape
VALUES_MAX = 1 << 16  # values kept for one tensor
TENSORS_MAX = 10_000  # tensors of one firing
NOTES_MAX = 1_000
NEXT_MAX = 10_000  # next_functions of one node, saved tensors of one node
NODE_DEPTH_MAX = 32  # levels of next_functions
PARTS_MAX = 1 << 16  # components of a nested tensor, stored rows of a sparse one whose index is kept
MODULES_MAX = 1_000_000
PARAMS_MAX = 10_000
SOURCE_FILES_MAX = 10_000
SOURCE_LINES_MAX = 100_000  # stored lines per file

HOOKS = HOOK_KINDS  # every kind a firing may have (engine/records/firing.py)


class TraceFileError(Exception):
    """The file is not a readable hooktui trace; `str()` says where and why."""


@dataclass
class LoadedTrace:
    info: TraceInfo
    events: list[Event]
    # {filename: {lineno: line}} stored when the trace was saved (empty for --json output).
    sources: dict[str, dict[int, str]] = field(default_factory=dict)
    # True when the file was `trace --json` output: no header, the info is rebuilt.
    headerless: bool = False


# -- the schema: what each field may hold ---------------------------------------------------
def _int(low: int = 0, high: int = INT_MAX) -> Any:
    if high > INT_MAX:  # msgspec bounds fit an int64; past it, its own limit is the uint64's
        assert high == UINT64_MAX
        return Annotated[int, Meta(ge=low), _UINT64]
    return Annotated[int, Meta(ge=low, le=high)]


_UINT64 = "up to 2**64-1"  # an integer msgspec reads up to UINT64_MAX (_explain's bound)


def _text(limit: int) -> Any:
    return Annotated[str, Meta(max_length=limit)]


def _list(item: Any, limit: int) -> Any:
    return Annotated[list[item], Meta(max_length=limit)]


def _dict(key: Any, value: Any, limit: int) -> Any:
    return Annotated[dict[key, value], Meta(max_length=limit)]


# JSON has no NaN or Infinity: writers spell them "nan", "inf", "-inf" (see _finite).
_NON_FINITE = {"nan": math.nan, "NaN": math.nan, "inf": math.inf, "Infinity": math.inf, "-inf": -math.inf, "-Infinity": -math.inf}
Number = Union[float, Literal[tuple(_NON_FINITE)]]
Count = _int()
Shape = _list(Count, DIMS_MAX)
Name = _text(NAME_MAX)
Text = _text(TEXT_MAX)
PathText = _text(PATH_MAX)
LineNumber = _int(1, 999_999_999)  # a key of the header's stored source lines ("12")
Phase = Literal[PHASES]
Hook = Literal[HOOKS]


class _Record(Struct, forbid_unknown_fields=True):
    """A record as a line holds it; `RECORD` names the records.py class it becomes."""


class _Stats(_Record):
    count: Count
    finite: Count = 0
    min: Number | None = None
    max: Number | None = None
    mean: Number | None = None
    std: Number | None = None
    absmax: Number | None = None
    norm: Number | None = None
    nan: Count = 0
    posinf: Count = 0
    neginf: Count = 0
    zeros: Count = 0
    nonfinite: Count = 0
    hist: _list(Count, 4_096) = []
    hist_range: _list(Number, 2) | None = None
    approx: bool = False
    sampled: Count = 0
    of: Literal["values", "abs"] = "values"
    hist_sampled: Count = 0


class _Layout(_Record):
    kind: Name
    stored: Shape
    index: _list(Shape, PARTS_MAX) | None = None
    parts: _list(Shape, PARTS_MAX) | None = None


class _Tensor(_Record):
    name: Name
    shape: Shape | None
    dtype: Name | None = None
    device: Name | None = None
    requires_grad: bool | None = None
    grad_fn: Name | None = None
    target: Name | None = None
    stats: _Stats | None = None
    values: _list(Number, VALUES_MAX) | None = None
    values_shape: Shape | None = None
    missing: Text | None = None
    note: Text | None = None
    extra: bool = False
    layout: _Layout | None = None


class _Node(_Record):
    name: Name
    seq_nr: _int(0, UINT64_MAX) | None = None
    next: _list(Union["_Node", None], NEXT_MAX) = []
    saved: _dict(Name, Union[Shape, Text], NEXT_MAX) = {}  # a shape, or a value as text
    truncated: bool = False


class _Source(_Record):
    filename: PathText
    lineno: _int(0, 10**9)
    function: Name
    line: Text = ""


class _Error(_Record):
    type: Name
    message: Text
    traceback: _text(TRACEBACK_MAX)


class _HookInfo(_Record):
    id: Count
    kind: Literal[tuple(KIND_TEXT)]
    owner: Name
    function: Name
    filename: PathText | None = None
    lineno: Count | None = None
    module: Name | None = None
    flags: _list(Name, NOTES_MAX) = []
    registered_at: PathText | None = None


class _HookCall(_Record):
    hook: _HookInfo
    returned: Literal["None", "same", "replaced", "raised"] = "None"
    changes: _list(Text, NOTES_MAX) = []
    error: Text | None = None


class _Event(_Record):
    index: Count
    phase: Phase
    hook: Hook
    module: Name
    module_type: Name
    call: Count
    grad_fn: Name | None = None
    tensors: _list(_Tensor, TENSORS_MAX) = []
    source: _Source | None = None
    node: _Node | None = None
    forward_index: Count | None = None
    notes: _list(Text, NOTES_MAX) = []
    error: _Error | None = None
    user_hook: _HookCall | None = None
    sub: Count = 0


class _Module(_Record):
    name: Name
    type: Name
    params: _dict(Name, Shape, PARAMS_MAX) = {}
    raw_name: Name | None = None


class _Info(_Record):
    model: PathText
    modules: _list(_Module, MODULES_MAX)
    loss: Text
    device: Name = "cpu"
    torch_version: Name = ""
    stopped_at: Count | None = None
    rank: _int(0, RANK_MAX) | None = None
    world_size: _int(1, RANK_MAX) | None = None
    stopped_sub: Count = 0


# The header's stored source lines: {filename: {"12": line}}.
Sources = _dict(PathText, _dict(LineNumber, Text, SOURCE_LINES_MAX), SOURCE_FILES_MAX)


class _Stopped(_Record):
    """`trace --json`'s last record after a value breakpoint: {"stopped": {"index",
    "breakpoint", "reason", "born"}} ("sub" too where the firing has a sub-number). Only
    the number is kept (the app says why it stopped from the firings)."""

    index: Count
    sub: Count = 0
    breakpoint: Text = ""
    reason: Text = ""
    born: Any = None


# Each record and the struct it is read as: the same fields, in the same order.
SCHEMA: dict[type, type[_Record]] = {
    TensorStats: _Stats, TensorRecord: _Tensor, LayoutRecord: _Layout, NodeRecord: _Node, SourceLocation: _Source, ErrorRecord: _Error,
    Event: _Event, UserHookCall: _HookCall, UserHookInfo: _HookInfo, ModuleInfo: _Module, TraceInfo: _Info,
}
_NAMES: dict[type, str] = {struct: record.__name__ for record, struct in SCHEMA.items()} | {_Stopped: "stopped"}
for _record, _struct in SCHEMA.items():
    _wanted = tuple(f.name for f in dataclasses.fields(_record))
    if _struct.__struct_fields__ != _wanted:
        raise TypeError(f"trace_file: the struct for {_record.__name__} has fields {_struct.__struct_fields__}, the record {_wanted}")
    for _field, _default in zip(reversed(dataclasses.fields(_record)), reversed(_struct.__struct_defaults__)):
        _made = _default.factory() if isinstance(_default, msgspec._core.Factory) else _default
        _same = _field.default_factory() if _field.default_factory is not dataclasses.MISSING else _field.default
        if _made != _same:
            raise TypeError(f"trace_file: {_record.__name__}.{_field.name} defaults to {_same!r}, its struct to {_made!r}")


# -- from structs to records ------------------------------------------------------------------
class _Invalid(Exception):
    def __init__(self, what: str, where: str = "") -> None:
        super().__init__(what)
        self.what, self.where = what, where

    def inside(self, part: str) -> _Invalid:
        """The same problem, one level further out (`part` is `.name` or `[3]`)."""
        self.where = part + self.where
        return self


def _numbers(values: list) -> list[float]:
    """Numbers as floats: "nan", "inf", "-inf" as what they spell (a list of plain floats,
    the usual case, as it is)."""
    if set(map(type, values)) <= {float}:
        return values
    return [_NON_FINITE[v] if type(v) is str else float(v) for v in values]


def _number(value: Any) -> float | None:
    return _NON_FINITE[value] if type(value) is str else value


def _stats(s: _Stats) -> TensorStats:
    fields = astuple(s)
    if not set(map(type, fields[2:8])) <= {float, type(None)}:
        fields = (*fields[:2], *map(_number, fields[2:8]), *fields[8:])
    stats = TensorStats(*fields)
    if stats.hist_range is not None:
        stats.hist_range = _numbers(stats.hist_range)
    return stats


def _values_fit(shape: list[int] | None, values: list | None, values_shape: list[int] | None) -> None:
    """The kept block must hold exactly as many values as its shape says: the values pane
    indexes by that shape, and must never be asked to allocate what the file only claims."""
    if (values is None) != (values_shape is None):
        raise _Invalid("values and values_shape come together (both or neither)", ".values_shape")
    if values is not None and math.prod(values_shape) != len(values):
        raise _Invalid(f"values_shape {values_shape} needs {math.prod(values_shape)} values, the record holds {len(values)}",
                       ".values_shape")
    if values_shape is not None and shape is not None and (
        len(shape) != len(values_shape) or any(k > n for k, n in zip(values_shape, shape))
    ):
        # The block is t[:k0, :k1, ...]: never larger than the tensor, in any dimension.
        raise _Invalid(f"values_shape {values_shape} is not a leading block of shape {shape}", ".values_shape")


def _rank_fits(rank: int | None, world_size: int | None) -> None:
    """A world size comes with a rank, and every rank is below it."""
    if world_size is None:
        return
    if rank is None:
        raise _Invalid("world_size without a rank", ".world_size")
    if rank >= world_size:
        raise _Invalid(f"rank {rank} of a world of {world_size}: ranks run from 0 to {world_size - 1}", ".rank")


def _tensor(t: _Tensor) -> TensorRecord:
    values = t.values
    layout = None if t.layout is None else _layout(t.layout)
    if values is not None or t.values_shape is not None:
        # A nested or sparse tensor's values are a block of its stored values (records.LayoutRecord).
        _values_fit(t.shape if layout is None else layout.stored, values, t.values_shape)
        values = _numbers(values)
    return TensorRecord(t.name, t.shape, t.dtype, t.device, t.requires_grad, t.grad_fn, t.target,
                        None if t.stats is None else _stats(t.stats), values, t.values_shape, t.missing,
                        None if t.note is None else note_kinds.typed_tensor_note(t.note), t.extra, layout)


def _layout(layout: _Layout) -> LayoutRecord:
    _layout_fits(layout.stored, layout.index)
    return LayoutRecord(*astuple(layout))


def _layout_fits(stored: list[int], index: list[list[int]] | None) -> None:
    """A sparse index names at most one entry per stored row."""
    if index is not None and len(index) > (stored[0] if stored else 0):
        raise _Invalid(f"{len(index)} indices for {stored[0] if stored else 0} stored rows", ".layout.index")


def _node(n: _Node, depth: int = 1) -> NodeRecord:
    if depth > NODE_DEPTH_MAX:
        raise _Invalid(f"records nested more than {NODE_DEPTH_MAX} levels deep")
    if n.seq_nr is not None and n.seq_nr > UINT64_MAX:  # msgspec's int past an int64 is not bounded
        raise _Invalid("seq_nr above 2**64-1")
    nexts = [None if m is None else _node(m, depth + 1) for m in n.next] if n.next else []
    return NodeRecord(n.name, n.seq_nr, nexts, n.saved, n.truncated)


def _hook_call(c: _HookCall) -> UserHookCall:
    return UserHookCall(UserHookInfo(*astuple(c.hook)), c.returned, c.changes, c.error)


def _to_event(e: _Event) -> Event:
    return Event(
        e.index, e.phase, e.hook, e.module, e.module_type, e.call, e.grad_fn,
        [_tensor(t) for t in e.tensors] if e.tensors else [],
        None if e.source is None else SourceLocation(*astuple(e.source)),
        None if e.node is None else _node(e.node),
        e.forward_index,
        note_kinds.typed(e.notes) if e.notes else [],
        None if e.error is None else ErrorRecord(*astuple(e.error)),
        None if e.user_hook is None else _hook_call(e.user_hook),
        e.sub,
    )


def _to_info(i: _Info) -> TraceInfo:
    _rank_fits(i.rank, i.world_size)
    modules = [ModuleInfo(*astuple(m)) for m in i.modules]
    return TraceInfo(i.model, modules, i.loss, i.device, i.torch_version, i.stopped_at, i.rank, i.world_size, i.stopped_sub)


_EVENTS = msgspec.json.Decoder(_Event)
_INFO = msgspec.json.Decoder(_Info)



# -- a refused line, in words -------------------------------------------------------------
def _got(value: Any) -> str:
    if isinstance(value, str):
        shown = value if len(value) <= 30 else value[:30] + "…"
        return f"a string of {len(value)} characters {shown!r}" if len(value) > 30 else f"the string {shown!r}"
    if isinstance(value, (dict, list)):
        return f"a JSON {'object' if isinstance(value, dict) else 'array'} of {len(value)} items"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return f"{type(value).__name__} {value!r}"


def _limits(tp: Any) -> tuple[Any, dict[str, Any]]:
    """A type without its Annotated metadata, and msgspec's bounds on it (ge, le, max_length)."""
    bounds: dict[str, Any] = {}
    while typing.get_origin(tp) is Annotated:
        for meta in tp.__metadata__:
            if meta is _UINT64:
                bounds["le"] = UINT64_MAX
            elif isinstance(meta, Meta):
                bounds.update({k: getattr(meta, k) for k in ("ge", "le", "max_length") if getattr(meta, k) is not None})
        tp = tp.__origin__
    return tp, bounds


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(struct: type[Struct]) -> dict[str, Any]:
    if struct not in _HINTS:
        _HINTS[struct] = typing.get_type_hints(struct, include_extras=True)
    return _HINTS[struct]


def _explain(tp: Any, value: Any, depth: int = 0) -> None:
    """Raise _Invalid for the first thing in `value` (JSON, as json.loads makes it) that
    the typed schema `tp` refuses, in the words a user reads; return if there is none."""
    tp, bounds = _limits(tp)
    if tp is Any:
        return
    if isinstance(tp, type) and issubclass(tp, Struct):
        _explain_record(tp, value, depth)
        return
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp == Number or origin in (Union, types.UnionType) and float in args:  # `Number | None` is one flat Union
        if value is None and type(None) in args:
            return
        if not (type(value) in (float, int) or type(value) is str and value in _NON_FINITE):
            raise _Invalid(f"expected a number, got {_got(value)}")
    elif origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return
        choices = [a for a in args if a is not type(None)]
        problems = []
        for choice in choices:
            try:
                _explain(choice, value, depth)
                return
            except _Invalid as exc:
                if len(choices) == 1:
                    raise
                problems.append(exc.what)
        raise _Invalid(" or ".join(problems))
    elif origin is Literal:
        if type(value) is not str or value not in args:
            raise _Invalid(f"expected one of {', '.join(args)}, got {_got(value)}")
    elif tp is bool:
        if type(value) is not bool:
            raise _Invalid(f"expected true or false, got {_got(value)}")
    elif tp is int:
        low, high = bounds.get("ge", -INT_MAX - 1), bounds.get("le", INT_MAX)
        if type(value) is not int or not low <= value <= high:
            raise _Invalid(f"expected an integer from {low} to {high}, got {_got(value)}")
    elif tp is str:
        if type(value) is not str:
            raise _Invalid(f"expected a string, got {_got(value)}")
        if len(value) > bounds["max_length"]:
            raise _Invalid(f"a string of {len(value)} characters, more than the {bounds['max_length']} this field may hold")
    elif origin is list:
        (item,) = args
        limit = bounds["max_length"]
        if type(value) is not list:
            raise _Invalid(f"expected a list{' of numbers' if item == Number else ''}, got {_got(value)}")
        if len(value) > limit:
            raise _Invalid(f"{len(value)} numbers, more than the {limit} a trace may hold" if item == Number
                           else f"a list of {len(value)} items, more than the {limit} this field may hold")
        for i, one in enumerate(value):
            try:
                _explain(item, one, depth)
            except _Invalid as exc:
                raise exc.inside(f"[{i}]") from None
    elif origin is dict:
        key_type, item = args
        limit = bounds["max_length"]
        if type(value) is not dict:
            raise _Invalid(f"expected an object, got {_got(value)}")
        if len(value) > limit:
            raise _Invalid(f"an object of {len(value)} keys, more than the {limit} this field may hold")
        for key, one in value.items():
            try:
                _explain(item, one, depth)  # the value first, then its key (as the hand-written checks did)
                if _limits(key_type)[0] is int:  # a line number, written as a string
                    # ASCII digits only: "²" and "①" pass isdigit() and not int().
                    if not (key.isascii() and key.isdigit()) or len(key) > 9 or key == "0" * len(key) or key != str(int(key)):
                        raise _Invalid(f"expected a line number, got {_got(key)}")
                else:
                    _explain(key_type, key, depth)
            except _Invalid as exc:
                raise exc.inside(f"[{key[:40]!r}]") from None
    else:  # pragma: no cover - a type the schema above does not use
        raise TypeError(f"trace_file._explain: no words for {tp!r}")


def _explain_record(struct: type[Struct], value: Any, depth: int) -> None:
    name = _NAMES[struct]
    if depth > NODE_DEPTH_MAX:
        raise _Invalid(f"records nested more than {NODE_DEPTH_MAX} levels deep")
    if type(value) is not dict:
        raise _Invalid(f"expected an object{f' ({name})' if struct is not _Stopped else ''}, got {_got(value)}")
    hints = _hints(struct)
    for key, one in value.items():
        if key not in hints:
            raise _Invalid(f"unknown field {str(key)[:40]!r} for {name}")
        try:
            _explain(hints[key], one, depth + 1)
        except _Invalid as exc:
            raise exc.inside(f".{key}") from None
    for required in struct.__struct_fields__[: len(struct.__struct_fields__) - len(struct.__struct_defaults__)]:
        if required not in value:
            raise _Invalid(f"missing field {required!r} of {name}")
    if struct is _Tensor:
        layout = value.get("layout")
        stored = layout.get("stored") if isinstance(layout, dict) else None
        _values_fit(value.get("shape") if stored is None else stored, value.get("values"), value.get("values_shape"))
    elif struct is _Layout:
        _layout_fits(value.get("stored"), value.get("index"))
    elif struct is _Info:
        _rank_fits(value.get("rank"), value.get("world_size"))


def _parse_int(digits: str) -> int:
    if len(digits.lstrip("-")) > INT_DIGITS_MAX:
        raise _Invalid(f"an integer of {len(digits)} digits, more than the {INT_DIGITS_MAX} a trace may hold")
    return int(digits)


def _parse(path: Path, number: int, line: bytes) -> Any:
    """A line as plain JSON (the header, and the words for a refused line)."""
    try:
        return json.loads(line.decode("utf-8"), parse_int=_parse_int)
    except UnicodeDecodeError:
        raise TraceFileError(f"{path}:{number}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        # json's own words may end with "at" ("Invalid control character at"): said once.
        raise TraceFileError(f"{path}:{number}: not JSON ({exc.msg.removesuffix(' at')} at column {exc.colno})") from None
    except _Invalid as exc:
        raise TraceFileError(f"{path}:{number}: {exc.what}") from None
    except RecursionError:
        raise TraceFileError(f"{path}:{number}: JSON nested too deeply for a trace line") from None


def _decoded_event(line: bytes) -> Event | None:
    """The line's firing, or None where the fast path cannot say (then `_event` says why)."""
    try:
        return _to_event(_EVENTS.decode(line))
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError, _Invalid):
        return None


def _event(path: Path, number: int, line: bytes) -> Event:
    event = _decoded_event(line)
    return event if event is not None else _slow_event(path, number, line)


def _slow_event(path: Path, number: int, line: bytes) -> Event:
    """A line the fast path refused: the first problem, in the schema's words. A line with
    no problem in them is JSON that msgspec does not take as text and Python's json does (a
    lone surrogate escape, "\\udcff", as Python writes an undecodable byte of a file name):
    its record is built from Python's reading of it, checked by msgspec all the same."""
    data = _parse(path, number, line)
    try:
        _explain(_Event, data)
    except _Invalid as exc:
        where = exc.where.lstrip(".") or "event"
        if len(where) > 100:  # a deep node tree: the start and the end say enough
            where = where[:40] + "…" + where[-40:]
        raise TraceFileError(f"{path}:{number}: {where}: {exc.what}") from None
    try:
        return _to_event(msgspec.convert(data, _Event, strict=True))
    except (msgspec.ValidationError, RecursionError, _Invalid) as exc:
        raise TraceFileError(f"{path}:{number}: {str(exc).splitlines()[0][:200] if str(exc) else 'not a readable firing'}") from None


# -- one record at a time (hooktui attach: the same records over a socket) --------------------
def decode_event_line(line: bytes, where: str, number: int = 0) -> Event:
    """One firing as a trace line holds it (`event_json`), every field checked as in a
    file; TraceFileError names `where`."""
    return _event(Path(where), number, line)


def _converted(struct: type[Struct], data: Any, where: str) -> Any:
    try:
        return msgspec.convert(data, struct, strict=True)
    except (msgspec.ValidationError, RecursionError) as exc:
        try:
            _explain(struct, data)
        except _Invalid as words:
            raise TraceFileError(f"{where}{words.where}: {words.what}") from None
        raise TraceFileError(f"{where}: {str(exc).splitlines()[0][:200]}") from None


def decode_info(data: Any, where: str) -> TraceInfo:
    """A header's `info` (TraceInfo.to_dict()), checked as in a file."""
    try:
        return _to_info(_converted(_Info, data, where))
    except _Invalid as exc:
        raise TraceFileError(f"{where}: {exc.what}") from None


def decode_tensor(data: Any, where: str) -> TensorRecord:
    """One tensor record (a firing's, as `event_json` writes it), checked as in a file."""
    try:
        return _tensor(_converted(_Tensor, data, where))
    except _Invalid as exc:
        raise TraceFileError(f"{where}: {exc.what}") from None


def tensor_data(tensor: TensorRecord) -> Any:
    """A tensor record as `event_json` writes it, for `decode_tensor`."""
    from .records import plain

    data = plain(tensor)
    if data.get("layout") is None:
        data.pop("layout", None)
    return _finite(data)


# -- writing ------------------------------------------------------------------------------
def event_json(event: Event) -> str:
    return json.dumps(_finite(event.to_dict()), separators=(",", ":"))


def check_save_path(path: str | os.PathLike) -> Path:
    """Refuse, before any work, a path a trace cannot be saved to; returns it as a Path."""
    if not str(path):
        raise TraceFileError("--save needs a file name")
    path = Path(path)
    parent = path.parent
    if path.is_dir():
        raise TraceFileError(f"{path}: is a folder; --save needs a file name")
    if not parent.is_dir():
        raise TraceFileError(f"{path}: folder {parent} does not exist")
    if path.exists() and not path.is_file():
        raise TraceFileError(f"{path}: not a regular file; --save writes a new trace file")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise TraceFileError(f"{path}: cannot write in folder {parent} (permission denied)")
    if path.exists() and not os.access(path, os.W_OK):
        raise TraceFileError(f"{path}: the file is read-only")
    return path


def write_trace(path: str | os.PathLike, info: TraceInfo, events: Sequence[Event]) -> None:
    """Write a trace file atomically, with the source lines around every call site."""
    path = check_save_path(path)
    sources = lines_near((e.source.filename, e.source.lineno) for e in events if e.source is not None)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            write_header(out, info, sources)
            for event in events:
                out.write(event_json(event) + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, _file_mode(path))
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def _file_mode(path: Path) -> int:
    """The mode a plain `open(path, "w")` would give: the old file's, else 0666 less the umask."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_header(out: IO[str], info: TraceInfo, sources: Mapping[str, Mapping[int, str]] | None = None) -> None:
    header: dict[str, Any] = {"format": FORMAT, "version": VERSION, "info": info.to_dict()}
    if sources:
        header["sources"] = {name: {str(n): line for n, line in sorted(lines.items())} for name, lines in sources.items()}
    out.write(json.dumps(header) + "\n")



# -- reading ------------------------------------------------------------------------------
def read_trace(path: str | os.PathLike) -> tuple[TraceInfo, list[Event]]:
    loaded = read_trace_file(path)
    return loaded.info, loaded.events


def read_trace_file(path: str | os.PathLike) -> LoadedTrace:
    """A trace file (or `hooktui trace --json` output), every line checked."""
    path = Path(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise TraceFileError(f"{path}: no such file") from None
    except OSError as exc:
        raise TraceFileError(f"{path}: cannot read: {exc.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        raise TraceFileError(f"{path}: is a folder, not a trace file")
    if not stat.S_ISREG(info.st_mode):
        raise TraceFileError(f"{path}: not a regular file (a device or a pipe), not a trace file")
    try:
        with open(path, "rb") as stream:
            return _read(path, stream)
    except OSError as exc:
        raise TraceFileError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _lines(path: Path, stream: IO[bytes]):
    """(number, line) of every line that is not blank, as bytes: msgspec checks UTF-8. The
    first one (a header) may be up to HEADER_LINE_MAX long, every other up to LINE_MAX."""
    number = 0
    readline = stream.readline
    limit, what = HEADER_LINE_MAX, "a header line"
    while True:
        raw = readline(limit + 1)
        if not raw:
            return
        number += 1
        if len(raw) > limit:
            raise TraceFileError(f"{path}:{number}: line longer than {limit >> 20} MiB, more than {what} may hold")
        if not raw.isspace():
            yield number, raw
            limit, what = LINE_MAX, "a trace line"


def _read(path: Path, stream: IO[bytes]) -> LoadedTrace:
    lines = _lines(path, stream)
    first = next(lines, None)
    if first is None:
        raise TraceFileError(f"{path}: empty file, not a hooktui trace")
    number, line = first
    fast = _decoded_header(line)
    if fast is not None:
        info, sources = fast
        events = [_event(path, n, text) for n, text in lines]
        return LoadedTrace(info=info, events=events, sources=sources)
    header = _parse(path, number, line)
    if isinstance(header, dict) and "format" not in header and "index" in header and "hook" in header:
        # `hooktui trace --json` output: the same event records without a header, and
        # after a value breakpoint one last `{"stopped": ...}` record (where the run stopped).
        events = [_event(path, number, line)]
        stopped_at = None
        for n, text in lines:
            event = _decoded_event(text) if stopped_at is None else None
            if event is not None:
                events.append(event)
                continue
            data = _parse(path, n, text)
            if type(data) is dict and "stopped" in data:
                stopped_at = _stopped(path, n, data)
            elif stopped_at is not None:
                raise TraceFileError(f"{path}:{n}: a firing after the run's `stopped` record")
            else:
                events.append(_event(path, n, text))  # raises, saying why
        info = _info_from_events(path, events)
        info.stopped_at, info.stopped_sub = stopped_at or (None, 0)
        return LoadedTrace(info=info, events=events, headerless=True)
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise TraceFileError(f"{path}: not a hooktui trace (write one with `hooktui trace MODEL --save FILE`)")
    version = header.get("version")
    if type(version) is not int or version != VERSION:  # `true` and `1.0` equal 1 in Python: not in a trace file
        raise TraceFileError(f"{path}: trace format version {_got(header.get('version'))}, this hooktui reads {VERSION}")
    unknown = set(header) - {"format", "version", "info", "sources"}
    if unknown:
        raise TraceFileError(f"{path}:{number}: header: unknown field {sorted(map(str, unknown))[0][:40]!r}")
    for key, struct, decode in (("info", _Info, _header_info), ("sources", Sources, _header_sources)):
        try:
            decoded = decode(header)
        except (msgspec.ValidationError, msgspec.DecodeError, RecursionError, _Invalid) as exc:
            try:
                _explain(struct, header.get(key, {}))
            except _Invalid as words:
                raise TraceFileError(f"{path}:{number}: header: {key}{words.where}: {words.what}") from None
            raise TraceFileError(f"{path}:{number}: header: {key}: {str(exc)[:200]}") from None
        if key == "info":
            info = decoded
        else:
            sources = decoded
    events = [_event(path, n, text) for n, text in lines]
    return LoadedTrace(info=info, events=events, sources=sources)


class _Header(_Record):
    """The first line of a saved trace, decoded in one pass straight from its bytes (a
    header of 200,000 modules is some 20 MB: Python's json and a convert took 11 s)."""

    format: Literal[FORMAT]
    version: Literal[VERSION]  # an integer: `true` and `1.0` are refused
    info: _Info
    sources: Sources = {}


_HEADER = msgspec.json.Decoder(_Header)


def _decoded_header(line: bytes) -> tuple[TraceInfo, dict[str, dict[int, str]]] | None:
    """The header's info and sources, or None where the fast path cannot say (not a header,
    `--json` output, or a refused header: then the slow path says why, in words)."""
    try:
        header = _HEADER.decode(line)
        return _to_info(header.info), header.sources
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError, _Invalid):
        return None


def _header_info(header: dict) -> TraceInfo:
    return _to_info(msgspec.convert(header.get("info"), _Info, strict=True))


def _header_sources(header: dict) -> dict[str, dict[int, str]]:
    return msgspec.convert(header.get("sources", {}), Sources, strict=True, str_keys=True)


def _stopped(path: Path, number: int, data: Any) -> tuple[int, int]:
    """The firing (index, sub) a `{"stopped": ...}` record names, every field of it checked."""
    try:
        if type(data) is not dict or set(data) != {"stopped"}:
            extra = sorted(map(str, set(data) - {"stopped"})) if type(data) is dict else ["?"]
            raise _Invalid(f"unknown field {extra[0][:40]!r} beside stopped")
        try:
            _explain(_Stopped, data["stopped"])
        except _Invalid as exc:
            raise exc.inside(".stopped") from None
        body = data["stopped"]
        return body["index"], body.get("sub", 0)
    except _Invalid as exc:
        raise TraceFileError(f"{path}:{number}: {exc.where.lstrip('.') or 'stopped'}: {exc.what}") from None


def _info_from_events(path: Path, events: list[Event]) -> TraceInfo:
    """What a header would say, from the events alone (for `--json` output)."""
    modules: dict[str, ModuleInfo] = {"": ModuleInfo("", "?")}
    for event in events:
        if event.module not in modules or modules[event.module].type == "?":
            modules[event.module] = ModuleInfo(event.module, event.module_type or "?")
    # Every parent before its children, as named_modules() lists them.
    ordered = sorted(modules.values(), key=lambda m: m.name.split(".") if m.name else [])
    device = next((t.device for e in events for t in e.tensors if t.device), "?")
    return TraceInfo(model=str(path), modules=ordered, loss="not recorded (a --json output has no header)", device=device)


def _finite(value: Any) -> Any:
    """JSON has no NaN/Infinity: write them as strings so every line is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        try:
            if all(map(math.isfinite, value)):  # a list of finite numbers (kept values, shapes): as it is
                return value
        except TypeError:  # not all numbers
            pass
        return [_finite(v) for v in value]
    return value
