"""Plain event records: what the engine hands to the UI, the CLI and trace files.

Nothing here imports torch or Textual, so a recorded trace can be read, rendered and
tested with no model attached. Every record round-trips through JSON.
"""

from __future__ import annotations

import copy
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

from .firing import HOOK_KINDS  # noqa: F401  (every kind a firing may have: firing.py is the one list)
from .notes import Note, joined
from .user_hook_records import UserHookCall, UserHookInfo

PHASES = ("forward", "backward")
# How a record says that hooktui's own summary of its tensor failed (engine/capture/contain.py).
SUMMARY_FAILED = "hooktui could not summarise this tensor"


@dataclass(slots=True)
class TensorStats:
    """Summary of one tensor, as it was when its firing happened (see engine/summaries/stats.py).

    min/max/mean/std/absmax/norm are over the finite values only; NaN and +/-Inf are
    counted separately, always exactly. `approx` is true when the tensor was too large
    and the numbers come from an evenly strided sample of `sampled` elements. For complex
    tensors the numbers describe |z| (`of == "abs"`). `hist_sampled > 0`: the histogram
    and `zeros` come from an evenly strided sample of that many elements (zeros scaled
    to the whole); 0 means they are exact.
    """

    count: int
    finite: int = 0
    min: float | None = None
    max: float | None = None
    mean: float | None = None
    std: float | None = None
    absmax: float | None = None
    norm: float | None = None
    nan: int = 0
    posinf: int = 0
    neginf: int = 0
    zeros: int = 0
    # Non-finite elements in the whole tensor: exact even when `approx`.
    nonfinite: int = 0
    hist: list[int] = field(default_factory=list)
    hist_range: list[float] | None = None
    approx: bool = False
    sampled: int = 0
    of: str = "values"
    hist_sampled: int = 0


@dataclass(slots=True)
class LayoutRecord:
    """How a nested or sparse tensor holds its values (engine/summaries/layouts.py). The
    record's `stats`, `values` and `values_shape` then describe the stored values: a
    dense tensor of shape `stored`, of which `values_shape` is a leading block."""

    kind: str  # "nested", or the sparse layout: "sparse_coo", "sparse_csr", ...
    stored: list[int]
    # Sparse: the index (one number per sparse dimension) of each stored row, coalesced, in
    # the order of the values (as many rows as the value block can hold).
    index: list[list[int]] | None = None
    # Nested: the shape of each component; the values are theirs, one after the other.
    parts: list[list[int]] | None = None

    def short(self) -> str:
        """ "sparse_coo 4 rows", "nested 2 parts": what the stats describe, in a few cells."""
        if self.parts is not None:
            return f"nested {len(self.parts)} part{'' if len(self.parts) == 1 else 's'}"
        rows = self.stored[0] if self.stored else 0
        return f"{self.kind} {rows} row{'' if rows == 1 else 's'}"

    def describe(self) -> str:
        """ "sparse_coo: 4 rows stored", "nested: 2 parts (5, 8) (3, 8)" """
        if self.parts is not None:
            shown = " ".join("(" + ", ".join(map(str, p)) + ")" for p in self.parts[:4])
            more = f" +{len(self.parts) - 4}" if len(self.parts) > 4 else ""
            return f"nested: {len(self.parts)} part{'' if len(self.parts) == 1 else 's'} {shown}{more}".rstrip()
        rows = self.stored[0] if self.stored else 0
        return f"{self.kind}: {rows} row{'' if rows == 1 else 's'} stored"


@dataclass(slots=True, eq=False)
class TensorRecord:
    """One tensor of a firing, or a missing one (`shape is None`, `missing` says why)."""

    name: str
    shape: list[int] | None
    dtype: str | None = None
    device: str | None = None
    requires_grad: bool | None = None
    grad_fn: str | None = None
    # For gradients: the forward-side tensor this gradient belongs to, e.g. "args[0]".
    target: str | None = None
    stats: TensorStats | None = None
    # A leading block of the tensor (row-major, flattened) and that block's shape.
    # `values_shape == shape` means every value was kept.
    values: list[float] | None = None
    values_shape: list[int] | None = None
    missing: str | None = None
    note: str | None = None  # text, or a Note of a kind (records/notes.py: held_grad, dtensor_local)
    # Shown beyond PyTorch's own hook arguments (e.g. the gradient of a tensor nested in an
    # output tuple, where PyTorch's grad_output slot is None): never under a PyTorch slot name.
    extra: bool = False
    # Nested and sparse tensors: how the values that stats and values describe are stored.
    layout: LayoutRecord | None = None

    @property
    def is_missing(self) -> bool:
        return self.shape is None

    @property
    def stored_shape(self) -> list[int] | None:
        """The shape `values_shape` is a leading block of: the stored values' of a nested or
        sparse tensor, the tensor's own otherwise."""
        return self.shape if self.layout is None else self.layout.stored

    @property
    def values_complete(self) -> bool:
        return self.values is not None and self.values_shape == self.stored_shape

    @property
    def nonfinite_counts(self) -> tuple[int, int, int] | None:
        """(NaN, +Inf, -Inf) in the whole tensor, exact; None without stats. Cheap on a
        lazy record: known at firing time, without computing the other statistics."""
        stats = self.stats
        return None if stats is None else (stats.nan, stats.posinf, stats.neginf)

    def __eq__(self, other: object) -> bool:
        # By field values, so a lazily summarised record equals its plain twin (a trace file's).
        if not isinstance(other, TensorRecord):
            return NotImplemented
        return all(getattr(self, f.name) == getattr(other, f.name) for f in fields(TensorRecord))


class LazyTensorRecord(TensorRecord):
    """A TensorRecord whose stats and value block are computed on first access.

    The engine builds it with the cheap, exact facts filled in and `_summary`, an object
    that computes the statistics and value block from a snapshot taken at firing time
    (engine/summaries/lazy_stats.py) and keeps them compact. `stats`, `values` and `values_shape`
    are left unset, so every read falls through to `__getattr__` and rebuilds them from
    that compact form: a new TensorStats and a new list each time (a TensorStats with its
    lists costs ~1 KB and three objects for the garbage collector to visit; packed, ~300
    bytes and none).
    """

    __slots__ = ("_summary",)

    @property
    def nonfinite_counts(self) -> tuple[int, int, int] | None:
        try:
            return self._summary.nonfinite_counts()
        except Exception as exc:
            return self._failed(exc).nonfinite_counts()

    def __getattr__(self, name: str):
        read = _READS.get(name)
        if read is None:
            raise AttributeError(name)
        try:
            return read(self._summary)
        except Exception as exc:
            # Read where nothing may fail (a guard's check inside a hook, a trace being
            # written): no statistics, and the note says why (engine/capture/contain.py).
            return read(self._failed(exc))

    def _failed(self, exc: Exception) -> _FailedSummary:
        text = str(exc).strip().splitlines()
        why = f"{SUMMARY_FAILED}: {type(exc).__name__}" + (f": {text[0]}" if text else "")
        self.note = joined(self.note, why)
        failed = self._summary = _FailedSummary()
        return failed


class _FailedSummary:
    """What a LazyTensorRecord reads once its summary has failed: nothing."""

    __slots__ = ()

    def read_stats(self) -> None:
        return None

    def read_values(self) -> None:
        return None

    def read_values_shape(self) -> None:
        return None

    def nonfinite_counts(self) -> None:
        return None

    def resolve(self) -> tuple:
        return None, None, None

    def drop_values(self) -> None:
        pass

    def settled(self) -> bool:
        return True


_READS = {
    "stats": lambda summary: summary.read_stats(),
    "values": lambda summary: summary.read_values(),
    "values_shape": lambda summary: summary.read_values_shape(),
}


@dataclass(slots=True, eq=False)
class NodeRecord:
    """An autograd node: its real name, creation order, inputs (next_functions), saved tensors."""

    name: str
    seq_nr: int | None = None
    next: list[NodeRecord | None] = field(default_factory=list)
    saved: dict[str, list[int] | str] = field(default_factory=dict)
    truncated: bool = False

    def __eq__(self, other: object) -> bool:
        # By field values, so a lazily built record (engine/autograd/nodes.py) equals its plain twin.
        if not isinstance(other, NodeRecord):
            return NotImplemented
        return self is other or (
            self.name == other.name and self.seq_nr == other.seq_nr and self.truncated == other.truncated
            and self.saved == other.saved and self.next == other.next
        )


@dataclass
class SourceLocation:
    filename: str
    lineno: int
    function: str
    line: str = ""


@dataclass
class ErrorRecord:
    type: str
    message: str
    traceback: str


class _FrozenList(list):
    """A list of notes that cannot be filled, shared by records: the empty one of every
    firing that has none (NO_NOTES), and those of firings that all say the same."""

    def _refuse(self, *_args, **_kwargs):
        raise TypeError("these notes are shared by several records: build a new list")

    def __reduce__(self):  # copy, deepcopy and pickle build it whole, never by appending
        return (_FrozenList, (list(self),))

    append = extend = insert = remove = pop = clear = sort = reverse = __setitem__ = __delitem__ = _refuse
    __iadd__ = __imul__ = _refuse


# Shared by every Event without notes (most of them), instead of an empty list each.
NO_NOTES: list[str] = _FrozenList()


def frozen_notes(notes: list[str]) -> list[str]:
    """A list of notes that cannot be filled, to share between records that say the same
    (as NO_NOTES is shared by those that say nothing)."""
    return _FrozenList(notes)


@dataclass(slots=True)
class Event:
    """One hook firing."""

    index: int
    phase: str
    hook: str
    module: str
    module_type: str
    call: int
    grad_fn: str | None = None
    tensors: list[TensorRecord] = field(default_factory=list)
    source: SourceLocation | None = None
    node: NodeRecord | None = None
    # Backward firings: index of the forward firing (kind "forward") of the same call.
    forward_index: int | None = None
    # Facts worth saying about this firing, e.g. why it fired early: text, or a Note (text with
    # a kind, records/notes.py) where another part of hooktui acts on the fact.
    notes: list[str] = field(default_factory=list)
    error: ErrorRecord | None = None
    # `user_hook` firings: which of the model's own hooks ran and what it did (user_hooks.py).
    user_hook: UserHookCall | None = None
    # Firings that exist only because the user stepped into a call's autograd nodes (`s`:
    # node_pre / node, engine/capture/node_steps.py) take no number of the plain sequence: the k-th
    # of them after plain firing N is N.k (`index` N, `sub` k). Every other firing has sub 0,
    # so a firing's number is the same whether or not anyone stepped (README, "numbers").
    sub: int = 0

    def to_dict(self) -> dict[str, Any]:
        data = plain(self)
        data["notes"] = list(self.notes)  # a plain list, also for NO_NOTES
        for tensor in data["tensors"]:
            if tensor["layout"] is None:
                del tensor["layout"]  # a dense tensor's line is what it was before layouts were recorded
        if not self.sub:
            del data["sub"]  # a plain firing's line is what it was before sub-numbers existed
        return data

    @property
    def key(self) -> tuple[int, int]:
        """What tells this firing from every other of its run, in firing order."""
        return (self.index, self.sub)

    @property
    def number(self) -> str:
        """The firing's number as every view prints it after `#`: "39", or "39.1"."""
        return firing_number(self.index, self.sub)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Event:
        return _build(cls, data)

    @property
    def main_tensor(self) -> TensorRecord | None:
        """The tensor a one-line summary should show: the first one that is present."""
        for tensor in self.tensors:
            if not tensor.is_missing:
                return tensor
        return None


def firing_number(index: int, sub: int = 0) -> str:
    return f"{index}.{sub}" if sub else str(index)


def _ascii_digits(text: str) -> bool:
    """0-9 only: "²" and "①" pass str.isdigit() and not int()."""
    return text.isascii() and text.isdigit()


def parse_firing_number(text: str) -> tuple[int, int] | None:
    """(index, sub) from "39", "#39" or "39.1"; None if it is not a firing number."""
    head, dot, tail = text.strip().lstrip("#").partition(".")
    if not _ascii_digits(head) or dot and not _ascii_digits(tail):
        return None
    return int(head), int(tail) if dot else 0


def position_of(events: Sequence[Event], index: int, sub: int = 0) -> int | None:
    """Where the firing numbered index.sub is in `events` (a run's firings, in firing
    order, so in the order of their numbers), or None. Positions and numbers differ
    once a firing has a sub-number or a firing was left out of a trace."""
    packed = getattr(events, "position_of", None)  # a packed store (held.py) knows its keys
    if packed is not None:
        return packed(index, sub)
    position = bisect_left(events, (index, sub), key=_key)
    if position < len(events) and events[position].key == (index, sub):
        return position
    return None


def firings_of(events: Sequence[Event], hook: str, module: str | None = None) -> list[Event]:
    """The firings of kind `hook` (of `module`, if given) in `events`, in order. A packed
    store (held.py) finds them from its index, without unpacking every firing."""
    where = getattr(events, "positions_where", None)
    if where is not None:
        return [events[at] for at in where(hook, module)]
    return [e for e in events if e.hook == hook and (module is None or e.module == module)]


def firing_heads(events: Sequence[Event], start: int = 0) -> Iterator[tuple[str, str, str, int]]:
    """(hook, phase, module, call) of each firing of `events` from position `start` on. A
    packed store (held.py) gives them from its columns, without unpacking a firing."""
    heads = getattr(events, "heads", None)
    if heads is not None:
        return heads(start)
    return ((e.hook, e.phase, e.module, e.call) for e in (events[at] for at in range(start, len(events))))


def firings_with_user_hook(events: Sequence[Event]) -> list[Event]:
    """The firings of `events` that name one of the model's own hooks (`user_hook`), in
    order; a packed store finds them from its index, unpacking only their chunks."""
    where = getattr(events, "positions_with_user_hook", None)
    if where is not None:
        return [events[at] for at in where()]
    return [e for e in events if e.user_hook is not None]


def _key(event: Event) -> tuple[int, int]:
    return (event.index, event.sub)


@dataclass
class ModuleInfo:
    name: str
    type: str
    # Parameters directly owned by this module: name -> shape.
    params: dict[str, list[int]] = field(default_factory=dict)
    # PyTorch's name for it, where a wrapper's prefix was dropped from `name` (wrappers.py).
    raw_name: str | None = None

    @property
    def depth(self) -> int:
        return 0 if not self.name else self.name.count(".") + 1

    @property
    def parent(self) -> str | None:
        if not self.name:
            return None
        return self.name.rpartition(".")[0]


@dataclass
class TraceInfo:
    """What a trace is of: enough for the UI to draw without the model."""

    model: str
    modules: list[ModuleInfo]
    loss: str
    device: str = "cpu"
    torch_version: str = ""
    # The firing (index) a run stopped at, e.g. hooktui.guard's first bad value: a recorded
    # trace opens there. Always a firing the file holds and every view shows (firing.py);
    # `stopped_sub` its sub-number (a hunt's node firing, N.1), left out where it is 0.
    stopped_at: int | None = None
    # The process's rank and the world size when the run was distributed (engine/records/ranks.py);
    # None otherwise, and in files written before they were recorded.
    rank: int | None = None
    world_size: int | None = None
    stopped_sub: int = 0

    def to_dict(self) -> dict[str, Any]:
        # What asdict makes, field by field, without its deep copies: a 200,000-module header
        # took asdict ~7 s (plain() ~2 s; each module's dict made directly, ~0.3 s).
        data = {}
        for name in _field_names(TraceInfo):
            value = getattr(self, name)
            data[name] = [_module_dict(m) for m in value] if name == "modules" else plain(value)
        for name in ("rank", "world_size"):
            if data[name] is None:
                del data[name]  # a single process's header is what it was before ranks were recorded
        if not self.stopped_sub:
            del data["stopped_sub"]  # as before sub-numbered stops existed
        return data

    @property
    def stopped_key(self) -> tuple[int, int] | None:
        """The stopped firing's Event.key, or None."""
        return None if self.stopped_at is None else (self.stopped_at, self.stopped_sub)

    def rank_text(self) -> str | None:
        """ "rank 0 of 2", "rank 3" (no world size known), or None (not distributed)."""
        if self.rank is None:
            return None
        return f"rank {self.rank}" + ("" if self.world_size is None else f" of {self.world_size}")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TraceInfo:
        return _build(cls, data)


def _module_dict(module: ModuleInfo) -> dict[str, Any]:
    """plain(module), made directly (a header holds one per module of the model)."""
    if type(module) is not ModuleInfo:
        return plain(module)
    params = {name: list(shape) if type(shape) is list else plain(shape) for name, shape in module.params.items()}
    return {"name": module.name, "type": module.type, "params": params, "raw_name": module.raw_name}


def _field_names(kind: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(kind)
    if names is None:
        names = _FIELD_NAMES[kind] = tuple(f.name for f in fields(kind))
    return names


_ATOMS = frozenset((str, int, float, bool, type(None), Note))  # a Note is its text, with a kind: kept as it is
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def plain(value: Any) -> Any:
    """What `dataclasses.asdict` makes of a record (dicts for records, new lists, tuples and
    dicts around the same atoms), at a fraction of its cost: records hold only strings,
    numbers, None, lists, tuples, dicts and records, so nothing needs asdict's deep copies
    (a firing's 1,024 kept values took it ~9 ms)."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is list or kind is tuple or kind is _FrozenList:
        if all(map(_ATOMS.__contains__, map(type, value))):
            return list(value) if kind is not tuple else value
        items = [plain(v) for v in value]
        return tuple(items) if kind is tuple else items
    if kind is dict:
        return {k: plain(v) for k, v in value.items()}
    names = _FIELD_NAMES.get(kind)
    if names is None:
        if not is_dataclass(value):
            return copy.deepcopy(value)  # not a record's kind of value: as asdict does
        names = _field_names(kind)
    return {name: plain(getattr(value, name)) for name in names}


# Nested record types by (owner class, field name); used to rebuild records from JSON.
_NESTED: dict[tuple[type, str], type] = {
    (Event, "tensors"): TensorRecord,
    (Event, "source"): SourceLocation,
    (Event, "node"): NodeRecord,
    (Event, "error"): ErrorRecord,
    (Event, "user_hook"): UserHookCall,
    (UserHookCall, "hook"): UserHookInfo,
    (TensorRecord, "stats"): TensorStats,
    (TensorRecord, "layout"): LayoutRecord,
    (NodeRecord, "next"): NodeRecord,
    (TraceInfo, "modules"): ModuleInfo,
}


def _build(cls: type, data: dict[str, Any]) -> Any:
    """Rebuild a record from a dict, rejecting unknown or missing keys with ValueError."""
    if not isinstance(data, dict):
        raise ValueError(f"expected an object for {cls.__name__}, got {type(data).__name__}")
    known = {f.name for f in fields(cls)}
    unknown = set(data) - known
    if unknown:
        raise ValueError(f"unknown keys for {cls.__name__}: {sorted(unknown)}")
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        nested = _NESTED.get((cls, name))
        if nested is not None and value is not None:
            if isinstance(value, list):
                value = [None if v is None else _build(nested, v) for v in value]
            else:
                value = _build(nested, value)
        kwargs[name] = value
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise ValueError(f"bad {cls.__name__}: {exc}") from None
