"""Trace files: JSON lines, a header line then one event per line. Plain JSON only
(never pickle): a trace may come from someone else.

Reading treats the file as hostile. Every field of every record is checked against SCHEMA
(type, range, length) before a record is built; lines, strings, lists and nesting are
capped; a block of values must be exactly as long as its shape says, so nothing is ever
allocated from a size the file merely claims. The first problem found is reported as one
TraceFileError naming the line and the field. (Control characters in strings are allowed
here; whoever shows them makes them visible: hooktui/visible.py.)

Adding a field to a record: give it a default in records.py and one line in SCHEMA below
(tests/engine/test_trace_schema.py fails until every field has one).

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
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from hooktui.engine.records.ranks import RANK_MAX
from hooktui.engine.records.records import PHASES, ErrorRecord, Event, ModuleInfo, NodeRecord, SourceLocation, TensorRecord, TensorStats, TraceInfo
from hooktui.engine.records.source_lines import lines_near
from hooktui.engine.records.user_hook_records import KIND_TEXT, UserHookCall, UserHookInfo

FORMAT = "hooktui-trace"
VERSION = 1

# -- limits on what a file may make the reader do -------------------------------------------
LINE_MAX = 8 << 20  # bytes in one line
NAME_MAX = 1_000  # characters in a name: module, type, tensor, dtype, device, node
TEXT_MAX = 20_000  # characters in a note, a message, a source line, a label
TRACEBACK_MAX = 200_000
PATH_MAX = 4_096
INT_DIGITS_MAX = 20  # JSON integers longer than this are refused before Python parses them
UINT64_MAX = 2**64 - 1
DIMS_MAX = 64  # dimensions of a shape
VALUES_MAX = 1 << 16  # values kept for one tensor
TENSORS_MAX = 10_000  # tensors of one firing
NOTES_MAX = 1_000
NEXT_MAX = 10_000  # next_functions of one node, saved tensors of one node
NODE_DEPTH_MAX = 32  # levels of next_functions
MODULES_MAX = 1_000_000
PARAMS_MAX = 10_000
SOURCE_FILES_MAX = 10_000
SOURCE_LINES_MAX = 100_000  # stored lines per file

HOOKS = ("forward_pre", "forward", "backward_pre", "backward", "param_grad", "final_grad", "legacy_backward", "node_pre", "node", "user_hook", "error")


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


# -- checks: each takes a JSON value and returns what the record holds, or raises _Invalid --
class _Invalid(Exception):
    def __init__(self, what: str, where: str = "") -> None:
        super().__init__(what)
        self.what, self.where = what, where

    def inside(self, part: str) -> _Invalid:
        """The same problem, one level further out (`part` is `.name` or `[3]`)."""
        self.where = part + self.where
        return self


Check = Callable[[Any], Any]


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


def integer(low: int = 0, high: int = 2**63 - 1) -> Check:
    def check(value: Any) -> int:
        if type(value) is not int or not low <= value <= high:
            raise _Invalid(f"expected an integer from {low} to {high}, got {_got(value)}")
        return value

    return check


_NON_FINITE = {"nan": math.nan, "NaN": math.nan, "inf": math.inf, "Infinity": math.inf, "-inf": -math.inf, "-Infinity": -math.inf}


def number(value: Any) -> float:
    """A float; JSON has no NaN or Infinity, so writers spell them "nan", "inf", "-inf"."""
    kind = type(value)
    if kind is float or kind is int:
        return float(value)
    if kind is str and value in _NON_FINITE:
        return _NON_FINITE[value]
    raise _Invalid(f"expected a number, got {_got(value)}")


def numbers(limit: int) -> Check:
    """A list of numbers; a list of plain floats (the usual case) is checked in one pass."""

    def check(value: Any) -> list[float]:
        if type(value) is not list:
            raise _Invalid(f"expected a list of numbers, got {_got(value)}")
        if len(value) > limit:
            raise _Invalid(f"{len(value)} numbers, more than the {limit} a trace may hold")
        if set(map(type, value)) <= {float}:
            return value
        out = []
        for i, item in enumerate(value):
            try:
                out.append(number(item))
            except _Invalid as exc:
                raise exc.inside(f"[{i}]") from None
        return out

    return check


def boolean(value: Any) -> bool:
    if type(value) is not bool:
        raise _Invalid(f"expected true or false, got {_got(value)}")
    return value


def text(limit: int) -> Check:
    def check(value: Any) -> str:
        if type(value) is not str:
            raise _Invalid(f"expected a string, got {_got(value)}")
        if len(value) > limit:
            raise _Invalid(f"a string of {len(value)} characters, more than the {limit} this field may hold")
        return value

    return check


def one_of(*choices: str) -> Check:
    def check(value: Any) -> str:
        if value not in choices or type(value) is not str:
            raise _Invalid(f"expected one of {', '.join(choices)}, got {_got(value)}")
        return value

    return check


def optional(inner: Check) -> Check:
    def check(value: Any) -> Any:
        return None if value is None else inner(value)

    return check


def list_of(inner: Check, limit: int) -> Check:
    def check(value: Any) -> list:
        if type(value) is not list:
            raise _Invalid(f"expected a list, got {_got(value)}")
        if len(value) > limit:
            raise _Invalid(f"a list of {len(value)} items, more than the {limit} this field may hold")
        out = []
        for i, item in enumerate(value):
            try:
                out.append(inner(item))
            except _Invalid as exc:
                raise exc.inside(f"[{i}]") from None
        return out

    return check


def dict_of(key: Check, inner: Check, limit: int) -> Check:
    def check(value: Any) -> dict:
        if type(value) is not dict:
            raise _Invalid(f"expected an object, got {_got(value)}")
        if len(value) > limit:
            raise _Invalid(f"an object of {len(value)} keys, more than the {limit} this field may hold")
        out = {}
        for k, item in value.items():
            try:
                out[key(k)] = inner(item)
            except _Invalid as exc:
                raise exc.inside(f"[{k[:40]!r}]") from None
        return out

    return check


def either(*checks: Check) -> Check:
    def check(value: Any) -> Any:
        problems = []
        for inner in checks:
            try:
                return inner(value)
            except _Invalid as exc:
                problems.append(exc.what)
        raise _Invalid(" or ".join(problems))

    return check


_depth = threading.local()


def record(cls: type) -> Check:
    """A nested record, checked against SCHEMA[cls]; nesting is capped (a node tree)."""

    def check(value: Any) -> Any:
        level = getattr(_depth, "level", 0)
        if level >= NODE_DEPTH_MAX:
            raise _Invalid(f"records nested more than {NODE_DEPTH_MAX} levels deep")
        _depth.level = level + 1
        try:
            return build(cls, value)
        finally:
            _depth.level = level

    return check


COUNT = integer()
SHAPE = list_of(integer(), DIMS_MAX)
NAME = text(NAME_MAX)

# One entry per field of every record: adding a field to a record is one line here.
SCHEMA: dict[type, dict[str, Check]] = {
    TensorStats: {
        "count": COUNT,
        "finite": COUNT,
        "min": optional(number),
        "max": optional(number),
        "mean": optional(number),
        "std": optional(number),
        "absmax": optional(number),
        "norm": optional(number),
        "nan": COUNT,
        "posinf": COUNT,
        "neginf": COUNT,
        "zeros": COUNT,
        "hist_sampled": COUNT,
        "nonfinite": COUNT,
        "hist": list_of(COUNT, 4_096),
        "hist_range": optional(numbers(2)),
        "approx": boolean,
        "sampled": COUNT,
        "of": one_of("values", "abs"),
    },
    TensorRecord: {
        "name": NAME,
        "shape": optional(SHAPE),
        "dtype": optional(NAME),
        "device": optional(NAME),
        "requires_grad": optional(boolean),
        "grad_fn": optional(NAME),
        "target": optional(NAME),
        "stats": optional(record(TensorStats)),
        "values": optional(numbers(VALUES_MAX)),
        "values_shape": optional(SHAPE),
        "missing": optional(text(TEXT_MAX)),
        "note": optional(text(TEXT_MAX)),
        "extra": boolean,
    },
    NodeRecord: {
        "name": NAME,
        "seq_nr": optional(integer(0, UINT64_MAX)),
        "next": list_of(optional(record(NodeRecord)), NEXT_MAX),
        "saved": dict_of(NAME, either(SHAPE, text(TEXT_MAX)), NEXT_MAX),  # a shape, or a value as text
        "truncated": boolean,
    },
    SourceLocation: {
        "filename": text(PATH_MAX),
        "lineno": integer(0, 10**9),
        "function": NAME,
        "line": text(TEXT_MAX),
    },
    ErrorRecord: {
        "type": NAME,
        "message": text(TEXT_MAX),
        "traceback": text(TRACEBACK_MAX),
    },
    Event: {
        "index": COUNT,
        "phase": one_of(*PHASES),
        "hook": one_of(*HOOKS),
        "module": NAME,
        "module_type": NAME,
        "call": COUNT,
        "grad_fn": optional(NAME),
        "tensors": list_of(record(TensorRecord), TENSORS_MAX),
        "source": optional(record(SourceLocation)),
        "node": optional(record(NodeRecord)),
        "forward_index": optional(COUNT),
        "notes": list_of(text(TEXT_MAX), NOTES_MAX),
        "error": optional(record(ErrorRecord)),
        "user_hook": optional(record(UserHookCall)),
        "sub": COUNT,
    },
    UserHookCall: {
        "hook": record(UserHookInfo),
        "returned": one_of("None", "same", "replaced", "raised"),
        "changes": list_of(text(TEXT_MAX), NOTES_MAX),
        "error": optional(text(TEXT_MAX)),
    },
    UserHookInfo: {
        "id": COUNT,
        "kind": one_of(*KIND_TEXT),
        "owner": NAME,
        "function": NAME,
        "filename": optional(text(PATH_MAX)),
        "lineno": optional(COUNT),
        "module": optional(NAME),
        "flags": list_of(NAME, NOTES_MAX),
        "registered_at": optional(text(PATH_MAX)),
    },
    ModuleInfo: {
        "name": NAME,
        "type": NAME,
        "params": dict_of(NAME, SHAPE, PARAMS_MAX),
        "raw_name": optional(NAME),
    },
    TraceInfo: {
        "model": text(PATH_MAX),
        "modules": list_of(record(ModuleInfo), MODULES_MAX),
        "loss": text(TEXT_MAX),
        "device": NAME,
        "torch_version": NAME,
        "stopped_at": optional(COUNT),
        "stopped_sub": COUNT,
        "rank": optional(integer(0, RANK_MAX)),
        "world_size": optional(integer(1, RANK_MAX)),
    },
}


def _values_fit(tensor: TensorRecord) -> None:
    """The kept block must hold exactly as many values as its shape says: the values pane
    indexes by that shape, and must never be asked to allocate what the file only claims."""
    if (tensor.values is None) != (tensor.values_shape is None):
        raise _Invalid("values and values_shape come together (both or neither)", ".values_shape")
    if tensor.values is not None and math.prod(tensor.values_shape) != len(tensor.values):
        raise _Invalid(
            f"values_shape {tensor.values_shape} needs {math.prod(tensor.values_shape)} values, the record holds {len(tensor.values)}",
            ".values_shape",
        )
    shape = tensor.shape
    if tensor.values_shape is not None and shape is not None and (
        len(shape) != len(tensor.values_shape) or any(k > n for k, n in zip(tensor.values_shape, shape))
    ):
        # The block is t[:k0, :k1, ...]: never larger than the tensor, in any dimension.
        raise _Invalid(f"values_shape {tensor.values_shape} is not a leading block of shape {shape}", ".values_shape")


def _rank_fits(info: TraceInfo) -> None:
    """A world size comes with a rank, and every rank is below it."""
    if info.world_size is None:
        return
    if info.rank is None:
        raise _Invalid("world_size without a rank", ".world_size")
    if info.rank >= info.world_size:
        raise _Invalid(f"rank {info.rank} of a world of {info.world_size}: ranks run from 0 to {info.world_size - 1}", ".rank")


# Checks across the fields of one record, after each field passed its own.
AFTER: dict[type, Callable[[Any], None]] = {TensorRecord: _values_fit, TraceInfo: _rank_fits}


def build(cls: type, data: Any) -> Any:
    """A `cls` record from JSON `data`, every field checked; raises _Invalid."""
    if type(data) is not dict:
        raise _Invalid(f"expected an object ({cls.__name__}), got {_got(data)}")
    schema = SCHEMA[cls]
    kwargs = {}
    for key, value in data.items():
        check = schema.get(key) if type(key) is str else None
        if check is None:
            raise _Invalid(f"unknown field {str(key)[:40]!r} for {cls.__name__}")
        try:
            kwargs[key] = check(value)
        except _Invalid as exc:
            raise exc.inside(f".{key}") from None
    for required in _REQUIRED[cls]:
        if required not in kwargs:
            raise _Invalid(f"missing field {required!r} of {cls.__name__}")
    built = cls(**kwargs)
    after = AFTER.get(cls)
    if after is not None:
        after(built)
    return built


_REQUIRED = {
    cls: [f.name for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    for cls in SCHEMA
}

# The header line: {"format", "version", "info", "sources"}.
def line_number(key: Any) -> int:
    """A JSON object key that is a line number ("12")."""
    if type(key) is not str or not key.isdigit() or len(key) > 9 or key == "0" * len(key):
        raise _Invalid(f"expected a line number, got {_got(key)}")
    return int(key)


# The header's stored source lines: {filename: {"12": line}}.
SOURCES = dict_of(text(PATH_MAX), dict_of(line_number, text(TEXT_MAX), SOURCE_LINES_MAX), SOURCE_FILES_MAX)


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
    number = 0
    while True:
        raw = stream.readline(LINE_MAX + 1)
        if not raw:
            return
        number += 1
        if len(raw) > LINE_MAX:
            raise TraceFileError(f"{path}:{number}: line longer than {LINE_MAX >> 20} MiB, more than a trace line may hold")
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise TraceFileError(f"{path}:{number}: not UTF-8 text") from None
        if line.strip():
            yield number, line


def _read(path: Path, stream: IO[bytes]) -> LoadedTrace:
    lines = _lines(path, stream)
    first = next(lines, None)
    if first is None:
        raise TraceFileError(f"{path}: empty file, not a hooktui trace")
    number, line = first
    header = _parse(path, number, line)
    if isinstance(header, dict) and "format" not in header and "index" in header and "hook" in header:
        # `hooktui trace --json` output: the same event records without a header, and
        # after a value breakpoint one last `{"stopped": ...}` record (where the run stopped).
        events = [_event(path, number, header)]
        stopped_at = None
        for n, text in lines:
            data = _parse(path, n, text)
            if type(data) is dict and "stopped" in data:
                stopped_at = _stopped(path, n, data)
            elif stopped_at is not None:
                raise TraceFileError(f"{path}:{n}: a firing after the run's `stopped` record")
            else:
                events.append(_event(path, n, data))
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
    try:
        info = build(TraceInfo, header.get("info"))
    except _Invalid as exc:
        raise TraceFileError(f"{path}:{number}: header: info{exc.where}: {exc.what}") from None
    try:
        sources = SOURCES(header.get("sources", {}))
    except _Invalid as exc:
        raise TraceFileError(f"{path}:{number}: header: sources{exc.where}: {exc.what}") from None
    events = [_event(path, n, _parse(path, n, text)) for n, text in lines]
    return LoadedTrace(info=info, events=events, sources=sources)


def _event(path: Path, number: int, data: Any) -> Event:
    try:
        return build(Event, data)
    except _Invalid as exc:
        where = exc.where.lstrip(".") or "event"
        if len(where) > 100:  # a deep node tree: the start and the end say enough
            where = where[:40] + "…" + where[-40:]
        raise TraceFileError(f"{path}:{number}: {where}: {exc.what}") from None


# `trace --json`'s last record after a value breakpoint: {"stopped": {"index", "breakpoint",
# "reason", "born"}} ("sub" too where the firing has a sub-number). Only the number is kept (the app says why it stopped from the firings).
STOPPED = {"index": COUNT, "sub": COUNT, "breakpoint": text(TEXT_MAX), "reason": text(TEXT_MAX), "born": lambda value: None}


def _stopped(path: Path, number: int, data: dict) -> tuple[int, int]:
    """The firing (index, sub) a `{"stopped": ...}` record names, every field of it checked."""
    try:
        if set(data) != {"stopped"}:
            raise _Invalid(f"unknown field {sorted(map(str, set(data) - {'stopped'}))[0][:40]!r} beside stopped")
        body = data["stopped"]
        if type(body) is not dict:
            raise _Invalid(f"expected an object, got {_got(body)}", ".stopped")
        for key, value in body.items():
            check = STOPPED.get(key)
            if check is None:
                raise _Invalid(f"unknown field {str(key)[:40]!r} for stopped", ".stopped")
            try:
                check(value)
            except _Invalid as exc:
                raise exc.inside(f".stopped.{key}") from None
        if "index" not in body:
            raise _Invalid("missing field 'index' of stopped", ".stopped")
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


def _parse_int(digits: str) -> int:
    if len(digits.lstrip("-")) > INT_DIGITS_MAX:
        raise _Invalid(f"an integer of {len(digits)} digits, more than the {INT_DIGITS_MAX} a trace may hold")
    return int(digits)


def _parse(path: Path, number: int, line: str) -> Any:
    try:
        return json.loads(line, parse_int=_parse_int)
    except json.JSONDecodeError as exc:
        raise TraceFileError(f"{path}:{number}: not JSON ({exc.msg} at column {exc.colno})") from None
    except _Invalid as exc:
        raise TraceFileError(f"{path}:{number}: {exc.what}") from None
    except RecursionError:
        raise TraceFileError(f"{path}:{number}: JSON nested too deeply for a trace line") from None


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
