"""A run's firings held packed: bytes in chunks, turned back into records when read.

Why: a held firing's records are a dozen small objects (an Event, its tensor records, their
statistics, a node record, lists), ~1.2 KB, allocated among the run's short-lived working
state. Python's small-object allocator gives an arena (1 MiB) back to the system only when
every block in it is free, so each arena a record survives in stays, with the free blocks
of the temporaries around it: another ~1.4 KB a firing (docs/benchmarks.md, 2026-12-05).

`HeldEvents` is a list of firings that packs them `CHUNK` at a time into one `bytes` each
(pickled, each tensor's statistics in stats_bytes.py's layout, the one a lazy summary keeps,
and its value block as a float32 or float64 buffer) and lets the record objects go, once
nothing changes a record any more:
a session's store once no run is under way in the process; the app's history
(`packs_at_run_end=False`) while the run goes on, a chunk once it is `PACK_BEHIND`
firings behind the latest (notes are only ever added to the latest firing: contain.py)
and every summary in it is settled (computed, its value block dropped by the budget of
engine/summaries/lazy_stats.py or never wanted: packing computes nothing and never waits
for a device), one chunk at a time on the thread that appends. A settled summary is
packed as the bytes it already holds (stats_bytes.py), a node tree built once. Reading a
firing unpickles its chunk (a few hundred microseconds) into plain records equal to the
ones given, field by field, Note kinds included; the last `CACHED_CHUNKS`
chunks read are kept decoded, so stepping through firings decodes each chunk once.

Readers that need only a few facts of every firing decode nothing: each firing's hook
kind, phase, module and call are kept in narrow columns besides (a byte, a byte, the
module's one name string, an int64: ~18 bytes a firing), and the positions of the firings
that name a hook of the model's own; and, for the packed firings, filled as a chunk packs
(its summaries settled then), a byte of NaN/Inf flags and a 2-byte code for the tuple of
its present tensors' names (a small vocabulary, each tuple kept once): 21 bytes a firing.
`positions_where` (Explain), `heads` (the timeline's filter, the overview's rows:
records.firing_heads), `positions_with_user_hook` (the Hooks screen:
records.firings_with_user_hook) and `positions_matching` (the `/` search:
analysis/search.py) read them.

A trace shorter than `PACK_AFTER` firings is never packed: it costs little, and its
records stay the very objects the engine made. The firings after the last whole chunk
stay objects too, and so do the firings of a store no run of this process filled (a trace
file's, in `hooktui view`: its reader's list holds them anyway).

No torch, no Textual: the bottom room's (records/__init__.py).
"""

from __future__ import annotations

import io
import operator
import pickle
import threading
import weakref
import zlib
from array import array
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import fields
from itertools import islice

from .records import NO_NOTES, Event, LazyTensorRecord, NodeRecord, TensorRecord, TensorStats
from .stats_bytes import counts_of, exact_bytes, unpack_stats

CHUNK = 32  # firings a chunk
PACK_AFTER = 2048  # a store packs once it holds this many firings
CACHED_CHUNKS = 8  # chunks kept decoded (the ones being looked at)
# While a run goes on, a chunk packs once it is this many firings behind the latest (a note
# is only ever added to the latest firing: contain.py) and every summary in it is settled.
PACK_BEHIND = 64
# At most one chunk packed per this many firings appended: a store falling behind catches
# up at four times the pace firings come, and no append waits for more than one chunk.
PACK_EVERY = 8

_runs = 0
_started = 0  # runs started in this process so far
_runs_lock = threading.Lock()
_stores: weakref.WeakSet = weakref.WeakSet()


def run_started() -> None:
    """A run starts in this process: no store packs until every run has ended (a live
    record may still change: a note added to the latest firing, a summary pending)."""
    global _runs, _started
    with _runs_lock:
        _runs += 1
        _started += 1


def run_ended() -> None:
    """A run ended (its summaries are on the host): once none is left under way, every
    store packs what it holds."""
    global _runs
    with _runs_lock:
        _runs = max(0, _runs - 1)
        idle = _runs == 0
    if idle:
        for store in list(_stores):
            if store.packs_at_run_end:
                store.pack()


class HeldEvents(Sequence):
    """A run's firings in firing order (a list's reading operations, `append` and `extend`),
    packed as the module docstring says.

    `packs_at_run_end=False` (the app's history, read by the screen): the store packs while
    the run goes on, a chunk at a time as each becomes final (`pack_settled`), and never
    packs what is still pending when the run ends (which would compute the summaries and
    hold the store's lock for as long as that takes). A session's store (`record`, `trace
    --save`) packs at the run's end, as before (1.6 KB a firing at 36k firings: its goal
    met; packing it as it goes was not measured on its own, docs/benchmarks.md)."""

    def __init__(self, events: Iterable[Event] = (), *, packs_at_run_end: bool = True) -> None:
        self.packs_at_run_end = packs_at_run_end
        self._settled = 0  # how many firings at the tail's start are known settled
        self._credit = 0  # firings appended since the last chunk packed while a run goes on
        # Every firing's hook kind and phase (codes: a byte each), module (its name, the
        # one string every firing of the module shares) and call, and the positions of the
        # firings that name one of the model's own hooks: for the readers that look for a
        # kind of firing or need only these facts (the timeline's filter, the overview's
        # rows, the Hooks screen's hit counts), without decoding a chunk. No new object a
        # firing: one made during the run and alive after it keeps the memory around it
        # (the module docstring).
        self._hooks = bytearray()
        self._phases = bytearray()
        self._modules: list[str] = []
        self._calls = array("q")  # NO_CALL where the record's call is no int64 >= 0 (read it then)
        self._user_hooks = array("q")
        self._hook_codes: dict[str, int] = {}
        self._hook_names: list[str] = []
        self._phase_codes: dict[str, int] = {}
        self._phase_names: list[str] = []
        # Of the packed firings only, filled as a chunk packs (its summaries settled then):
        # whether a tensor holds NaN / Inf (NAN | INF, a byte) and which tensors are there
        # (a code for the tuple of the present ones' names, from a small vocabulary): what
        # the `/` search asks of a firing beyond the columns above (positions_matching).
        self._nonfinite = bytearray()
        self._names = array("H")  # NO_NAMES past the vocabulary's 65,535th tuple
        self._name_codes: dict[tuple[str, ...], int] = {}
        self._name_sets: list[tuple[str, ...]] = []
        self._chunks = _Slab()
        # Value blocks, each once however many records share it (one tensor's summary is
        # shared by the firings that saw it: a module's output is the next one's input).
        self._blocks = _Slab()
        self._tail: list[Event] = []  # the firings after the packed ones, as records
        self._keys = array("q")  # (index, sub) of the packed firings, for position_of
        self._subs = array("q")
        self._cache: OrderedDict[int, list[Event]] = OrderedDict()
        self._lock = threading.RLock()
        # Only the firings of a run made in this process are packed: a store filled from a
        # trace file (`hooktui view`, `diff`) stays as it was given, its list held anyway.
        self._runs_before = _started - _runs
        _stores.add(self)
        self.extend(events)

    # -- growing ---------------------------------------------------------------------
    def append(self, event: Event) -> None:
        with self._lock:
            self._tail.append(event)
            self._index(event)
            if len(self._tail) >= CHUNK and self._live:
                if self.packs_at_run_end:
                    if _runs == 0:
                        self.pack()
                else:
                    self._credit += 1
                    if self._credit >= PACK_EVERY and len(self._tail) >= CHUNK + PACK_BEHIND:
                        self.pack_settled()

    def extend(self, events: Iterable[Event]) -> None:
        for event in events:
            self.append(event)

    def _index(self, event: Event) -> None:
        # Called after the firing joined the tail: its position is the store's last.
        self._hooks.append(_code(self._hook_codes, self._hook_names, event.hook))
        self._phases.append(_code(self._phase_codes, self._phase_names, event.phase))
        self._modules.append(event.module)
        call = event.call
        self._calls.append(call if type(call) is int and 0 <= call <= _INT64_MAX else NO_CALL)
        if event.user_hook is not None:
            self._user_hooks.append(len(self) - 1)

    def clear(self) -> None:
        """Let go of every firing (as a list's `clear`)."""
        with self._lock:
            self._chunks, self._blocks, self._tail = _Slab(), _Slab(), []
            self._keys, self._subs, self._cache = array("q"), array("q"), OrderedDict()
            self._hooks, self._phases, self._modules = bytearray(), bytearray(), []
            self._calls, self._user_hooks = array("q"), array("q")
            self._nonfinite, self._names = bytearray(), array("H")
            self._settled = self._credit = 0

    def pack_settled(self) -> bool:
        """Pack the oldest chunk held as records if it is final: at least PACK_BEHIND firings
        behind the latest, every summary in it settled (computed and its value block dropped
        or never wanted: nothing is computed here and no device is waited for). True when it
        packed one."""
        with self._lock:
            tail = self._tail
            if len(tail) < CHUNK + PACK_BEHIND or len(self) < PACK_AFTER or not self._live:
                return False
            at = self._settled
            while at < CHUNK:
                if not _settled(tail[at]):
                    self._settled = at
                    return False
                at += 1
            self._settled = 0
            self._credit = 0
            self._pack_chunk({}, own_trees=True)
            return True

    @property
    def _live(self) -> bool:
        """A run was under way in this process while the store existed."""
        return _started > self._runs_before

    def pack(self) -> None:
        """Pack every whole chunk of the firings held as records (none below PACK_AFTER)."""
        with self._lock:
            if len(self) < PACK_AFTER or not self._live:
                return
            shared: dict[int, tuple] = {}  # id(summary) -> (summary, its block's number)
            while len(self._tail) >= CHUNK:
                self._pack_chunk(shared)
            self._settled = 0

    def _pack_chunk(self, shared: dict[int, tuple], own_trees: bool = False) -> None:
        part = self._tail[:CHUNK]
        self._chunks.add(_encode(part, self._blocks, shared, own_trees))
        self._keys.extend([e.index for e in part])
        self._subs.extend([e.sub for e in part])
        codes, sets = self._name_codes, self._name_sets
        for event in part:  # read as packed: a failed summary's note was added in _encode
            self._nonfinite.append(nonfinite_flags(event))
            names = tuple([t.name for t in event.tensors if not t.is_missing])
            code = codes.get(names)
            if code is None and len(sets) < NO_NAMES:
                code = codes[names] = len(sets)
                sets.append(names)
            self._names.append(NO_NAMES if code is None else code)
        del self._tail[:CHUNK]

    @property
    def packed(self) -> int:
        """How many firings are held packed."""
        return len(self._chunks) * CHUNK

    # -- reading ---------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._chunks) * CHUNK + len(self._tail)

    def __bool__(self) -> bool:
        return bool(self._chunks) or bool(self._tail)

    def __getitem__(self, at):
        if isinstance(at, slice):
            return _Window(self, range(*at.indices(len(self))))
        with self._lock:
            n = len(self)
            if at < 0:
                at += n
            if not 0 <= at < n:
                raise IndexError("firing position out of range")
            packed = len(self._chunks) * CHUNK
            if at >= packed:
                return self._tail[at - packed]
            return self._chunk(at // CHUNK)[at % CHUNK]

    def __iter__(self) -> Iterator[Event]:
        return self.iter_from(0)

    def iter_from(self, start: int) -> Iterator[Event]:
        """The firings from position `start` on, a chunk decoded at a time."""
        at, skip = divmod(start, CHUNK)
        while True:
            with self._lock:
                chunks = len(self._chunks)
                if at < chunks:
                    chunk = self._cache.get(at)
                    if chunk is None:
                        chunk = _decode(self._chunks.get(at), self._blocks)
                else:
                    chunk = None
                    tail = self._tail[(at - chunks) * CHUNK + skip:]
            if chunk is None:
                yield from tail
                return
            yield from chunk[skip:] if skip else chunk
            at, skip = at + 1, 0

    def __reversed__(self) -> Iterator[Event]:
        for at in range(len(self) - 1, -1, -1):
            yield self[at]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (HeldEvents, list, tuple)):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = object.__hash__  # by identity: stores are kept in a WeakSet

    def __add__(self, other) -> list[Event]:  # as a list's: a new list
        return list(self) + list(other)

    def __radd__(self, other) -> list[Event]:
        return list(other) + list(self)

    def __repr__(self) -> str:
        return f"HeldEvents({len(self)} firings, {self.packed} packed)"

    def __reduce__(self):
        return (HeldEvents, (list(self),))

    def position_of(self, index: int, sub: int = 0) -> int | None:
        """records.position_of without decoding a chunk: the packed firings' keys are kept."""
        with self._lock:
            keys, subs = self._keys, self._subs
            lo = bisect_left(keys, index)
            while lo < len(keys) and keys[lo] == index:
                if subs[lo] == sub:
                    return lo
                if subs[lo] > sub:
                    return None
                lo += 1
            # The firings not packed yet (a whole recorded trace, the app's last ~5,000 of a
            # run) are in the order of their numbers too: bisected, not walked (Explain asks
            # at every step).
            tail = self._tail
            at = bisect_left(tail, (index, sub), key=_firing_key)
            if at < len(tail) and tail[at].index == index and tail[at].sub == sub:
                return len(keys) + at
        return None

    def hook_at(self, position: int) -> str:
        """The hook kind of the firing at `position`, without decoding its chunk."""
        code = self._hooks[position]
        return self._hook_names[code] if code < 255 else self[position].hook

    def heads(self, start: int = 0) -> Iterator[tuple[str, str, str, int]]:
        """(hook, phase, module, call) of each firing from position `start` on, from the
        columns, without decoding a chunk: what the timeline's filter and the overview's
        rows read of every firing (records.firing_heads)."""
        with self._lock:
            end = len(self)
            hooks, phases = self._hooks[start:end], self._phases[start:end]
            modules, calls = self._modules[start:end], self._calls[start:end]
        hook_names, phase_names = self._hook_names, self._phase_names
        for at, hook, phase, module, call in zip(range(start, end), hooks, phases, modules, calls):
            if hook == 255 or phase == 255 or call == NO_CALL:  # not in the columns: the record says
                event = self[at]
                yield event.hook, event.phase, event.module, event.call
            else:
                yield hook_names[hook], phase_names[phase], module, call

    def positions_with_user_hook(self) -> list[int]:
        """Positions of the firings whose record names one of the model's own hooks
        (`Event.user_hook`), in order, found without decoding a chunk."""
        with self._lock:
            return self._user_hooks.tolist()

    def positions_where(self, hook: str, module: str | None = None) -> list[int]:
        """Positions of the firings of kind `hook` (of `module`, if given), in order, found
        without decoding a chunk (explain looks for a module's param_grad firings at every
        step: a scan of the records would decode every chunk)."""
        with self._lock:
            code = self._hook_codes.get(hook)
            if code is None:
                return []
            if code >= 255:
                return [at for at, e in enumerate(self) if e.hook == hook and (module is None or e.module == module)]
            hooks, found = self._hooks, []
            if module is None:
                byte = bytes((code,))
                at = hooks.find(byte)
                while at >= 0:
                    found.append(at)
                    at = hooks.find(byte, at + 1)
                return found
            modules = self._modules
            at = -1
            while True:
                try:
                    at = modules.index(module, at + 1)  # at C speed, a module's firings are few
                except ValueError:
                    return found
                if hooks[at] == code:
                    found.append(at)

    def positions_matching(self, start: int, end: int, *, hook: Callable[[str], bool], phase: Callable[[str], bool],
                           module: Callable[[str], bool], names: Callable[[tuple[str, ...]], bool] | None = None,
                           nonfinite: Callable[[int], bool] | None = None,
                           record: Callable[[Event], bool]) -> list[int]:
        """Positions from `start` to `end` (or the last) of the firings a query matches, in
        order, a packed firing decided from the columns without decoding its chunk (the
        `/` search: engine/analysis/search.py).

        `record(event)` is the whole query; the other tests are its parts, each asked once
        for each distinct value, not once a firing: of the hook kind, phase and module name
        (columns every firing has); `names`, of the tuple of the names of the firing's
        tensors that are not missing, and `nonfinite`, of its NAN | INF flags
        (`nonfinite_flags`): columns of the packed firings only; None where the query asks
        nothing of them. A firing the columns cannot tell (one held as a record, for these
        two; a code past a column's) is read and given to `record` once the others pass."""
        with self._lock:
            end = min(end, len(self))
            packed = len(self._chunks) * CHUNK
            hooks, phases, modules = self._hooks, self._phases, self._modules
            flags, name_codes, name_sets = self._nonfinite, self._names, self._name_sets
            hook_ok = [hook(name) for name in self._hook_names[:255]] + [None]  # None: code 255
            phase_ok = [phase(name) for name in self._phase_names[:255]] + [None]
            module_ok: dict[str, bool] = {}
            flags_ok = None if nonfinite is None else [nonfinite(f) for f in range((NAN | INF) + 1)]
            names_ok: dict[int, bool | None] = {NO_NAMES: None}
            asks_more = names is not None or nonfinite is not None
            found: list[int] = []
            undecided: list[int] = []
            for at in range(start, end):
                ok = hook_ok[hooks[at]]
                if ok:
                    ok = phase_ok[phases[at]]
                    if ok:
                        name = modules[at]
                        ok = module_ok.get(name)
                        if ok is None:
                            ok = module_ok[name] = module(name)
                        if ok and asks_more:
                            if at >= packed:
                                ok = None
                            else:
                                if flags_ok is not None:
                                    ok = flags_ok[flags[at]]
                                if ok and names is not None:
                                    code = name_codes[at]
                                    ok = names_ok.get(code, _UNASKED)
                                    if ok is _UNASKED:
                                        ok = names_ok[code] = names(name_sets[code])
                if ok:
                    found.append(at)
                elif ok is None:
                    undecided.append(at)
            tail = self._tail
            # The tail's records, or (a code past a column's) a chunk decoded.
            read = [(at, tail[at - packed] if at >= packed else self[at]) for at in undecided]
        if read:  # out of the lock: a live record's test may compute its NaN counts
            found.extend(at for at, event in read if record(event))
            found.sort()
        return found

    def _chunk(self, at: int) -> list[Event]:
        cache = self._cache
        chunk = cache.get(at)
        if chunk is not None:
            cache.move_to_end(at)
            return chunk
        chunk = cache[at] = _decode(self._chunks.get(at), self._blocks)
        if len(cache) > CACHED_CHUNKS:
            cache.popitem(last=False)
        return chunk


NO_CALL = -1  # in the call column: the record's call is not a number the column holds
NO_NAMES = 0xFFFF  # in the tensor names column: a tuple past the vocabulary (read the record)
NAN, INF = 1, 2  # in the nonfinite column
_UNASKED = object()


def nonfinite_flags(event: Event) -> int:
    """NAN if a tensor of `event` holds a NaN, | INF if one holds +/-Inf (its exact counts:
    the search's `nan` / `inf` / `nonfinite` words, the timeline's `!` column)."""
    flags = 0
    for tensor in event.tensors:
        counts = tensor.nonfinite_counts
        if counts is not None:
            if counts[0] > 0:
                flags |= NAN
            if counts[1] + counts[2] > 0:
                flags |= INF
    return flags
_INT64_MAX = (1 << 63) - 1


def _firing_key(event: Event) -> tuple[int, int]:
    return event.index, event.sub


def _code(codes: dict[str, int], names: list[str], name: str) -> int:
    """`name`'s code in a byte column: 255 for every name past the 255th (never, in
    practice: the column's readers then read the record)."""
    code = codes.get(name)
    if code is None:
        code = codes[name] = len(names)
        names.append(name)
    return code if code < 255 else 255


def _settled(event: Event) -> bool:
    """Nothing in `event` will change any more (its tensors' summaries: the only part of a
    record that changes after the firing besides the latest firing's notes)."""
    for tensor in event.tensors:
        summary = getattr(tensor, "_summary", None)  # a lazy record's (records.py)
        if summary is not None and not summary.settled():
            return False
    return True


class _Window(Sequence):
    """A slice of a store, read through it: `events[:cursor + 1]` decodes nothing until its
    firings are read (the app's walk to the next stop slices the whole history)."""

    __slots__ = ("_store", "_range")

    def __init__(self, store: HeldEvents, positions: range) -> None:
        self._store, self._range = store, positions

    def __len__(self) -> int:
        return len(self._range)

    def __getitem__(self, at):
        if isinstance(at, slice):
            return _Window(self._store, self._range[at])
        return self._store[self._range[at]]

    def __iter__(self) -> Iterator[Event]:
        r = self._range
        if r.step == 1:  # chunk by chunk, as the store iterates
            for _, event in zip(r, self._store.iter_from(r.start)):
                yield event
            return
        for at in r:
            yield self._store[at]

    def heads(self, start: int = 0) -> Iterator[tuple[str, str, str, int]]:
        """HeldEvents.heads, of this slice's firings from its position `start` on."""
        r = self._range[start:]
        if r.step == 1:
            return islice(self._store.heads(r.start), len(r))
        return ((e.hook, e.phase, e.module, e.call) for e in (self._store[at] for at in r))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Sequence, list)):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other):
        return list(self) + list(other)


class _Slab:
    """Byte strings end to end in one buffer: no small object each (a value block of 64
    floats is 257 bytes, which Python's small-object allocator would place among the run's
    freed memory, keeping its arena)."""

    __slots__ = ("data", "ends")

    def __init__(self) -> None:
        self.data = bytearray()
        self.ends = array("Q")

    def add(self, item: bytes) -> int:
        self.data += item
        self.ends.append(len(self.data))
        return len(self.ends) - 1

    def get(self, at: int) -> bytes:
        start = self.ends[at - 1] if at else 0
        return bytes(self.data[start:self.ends[at]])

    def __len__(self) -> int:
        return len(self.ends)

    @property
    def nbytes(self) -> int:
        return len(self.data) + len(self.ends) * self.ends.itemsize


# -- the encoding ------------------------------------------------------------------------
_EVENT_FIELDS = operator.attrgetter(*(f.name for f in fields(Event)))


def _pack_values(values):
    """A value block as b"f" or b"d" and its buffer, float32 where that holds every value
    exactly; a list as it is when it holds anything but floats (a file's integers)."""
    if values is None or type(values) is not list or not set(map(type, values)) <= _FLOAT:
        return values
    narrow = array("f", values)
    if narrow.tolist() == values:
        return b"f" + narrow.tobytes()
    return b"d" + array("d", values).tobytes()


_FLOAT = frozenset((float,))


def _unpack_values(packed):
    if type(packed) is not bytes:
        return packed
    values = array(chr(packed[0]))
    values.frombytes(packed[1:])
    return values.tolist()


def _tensor(name, shape, dtype, device, requires_grad, grad_fn, target, stats, values, values_shape, missing, note,
            extra, layout) -> TensorRecord:
    values = _values_of(values)
    if type(stats) is bytes and (values is None or type(values) is bytes):
        # Statistics and values stay packed until read, as a lazy record's do (records.py).
        record = LazyTensorRecord.__new__(LazyTensorRecord)
        record.name, record.shape, record.dtype, record.device = name, shape, dtype, device
        record.requires_grad, record.grad_fn, record.target = requires_grad, grad_fn, target
        record.missing, record.note, record.extra, record.layout = missing, note, extra, layout
        record._summary = _Packed(stats, values, values_shape)
        return record
    return TensorRecord(
        name, shape, dtype, device, requires_grad, grad_fn, target,
        unpack_stats(stats) if type(stats) is bytes else stats, _unpack_values(values), values_shape, missing, note,
        extra, layout,
    )


class _Packed:
    """What a record read back from a chunk reads its statistics and values from: their
    packed bytes, unpacked on each read (the interface records.LazyTensorRecord reads)."""

    __slots__ = ("stats", "values", "values_shape")

    def __init__(self, stats: bytes | None, values: bytes | None, values_shape) -> None:
        self.stats, self.values, self.values_shape = stats, values, values_shape

    def read_stats(self) -> TensorStats | None:
        return None if self.stats is None else unpack_stats(self.stats)

    def read_values(self) -> list[float] | None:
        return None if self.values is None else _unpack_values(self.values)

    def read_values_shape(self):
        return self.values_shape

    def nonfinite_counts(self) -> tuple[int, int, int] | None:
        return None if self.stats is None else counts_of(self.stats)

    def resolve(self) -> tuple:
        return self.read_stats(), self.read_values(), self.read_values_shape()

    def drop_values(self) -> None:
        pass


def _stats_bytes(stats: TensorStats) -> bytes | TensorStats:
    """Statistics in stats_bytes.py's layout, or the TensorStats itself (pickled as it is)
    where the layout cannot give it back as it was: a trace file's, an integer where a
    float is (tests/engine/test_held_events.py), can reach a store that packs (one made in
    a process where a run then starts). What the engine makes always fits."""
    packed = exact_bytes(stats)
    return stats if packed is None else packed


def _no_notes() -> list[str]:
    return NO_NOTES


# A value block is pickled as its number in the store's list of blocks (an int where a
# value list or None is otherwise); the chunk being read says which list (`_decode`).
_reading = threading.local()


def _values_of(values):
    return _reading.blocks.get(values) if type(values) is int else values


class _Packer(pickle.Pickler):
    def __init__(self, out, blocks: _Slab, shared: dict[int, tuple], own_trees: bool = False) -> None:
        super().__init__(out, protocol=pickle.HIGHEST_PROTOCOL)
        self.blocks, self.shared = blocks, shared
        # Lazy node records built here, shared by the chunk's firings (while a run goes on:
        # the autograd room's cache of built trees is the model thread's), else read as
        # the app reads them. Measured at a run's end, the trees built here per chunk left
        # 0.35 KB a firing more of Python's arenas kept than the shared cache did.
        self.nodes: dict | None = {} if own_trees else None

    def reducer_override(self, obj):
        if type(obj) is LazyTensorRecord:
            packed = self._summarised(obj)
            if packed is not None:
                return packed
        if isinstance(obj, TensorRecord):
            # Statistics and values first: a summary that fails adds its note (records.py).
            stats, values, values_shape = obj.stats, obj.values, obj.values_shape
            return _tensor, (
                obj.name, obj.shape, obj.dtype, obj.device, obj.requires_grad, obj.grad_fn, obj.target,
                None if stats is None else _stats_bytes(stats), self._values(obj, values), values_shape, obj.missing,
                obj.note, obj.extra, obj.layout,
            )
        if type(obj) is Event:
            return Event, _EVENT_FIELDS(obj)
        if isinstance(obj, NodeRecord):  # a lazy one (engine/autograd/nodes.py) as its plain twin
            plain = getattr(obj, "plain_record", None) if self.nodes is not None else None
            if plain is not None:  # built once, not once per field read
                obj = plain(self.nodes)
            return NodeRecord, (obj.name, obj.seq_nr, obj.next, obj.saved, obj.truncated)
        if obj is NO_NOTES:
            return _no_notes, ()
        return NotImplemented

    def _summarised(self, record: LazyTensorRecord):
        """A lazy record's reduction from its summary's compact bytes (no TensorStats or
        value list built); None where the summary has none (read as any record then)."""
        compact = getattr(record._summary, "compact", None)
        if compact is None:
            return None
        try:
            stats, block, wide, block_shape = compact()
        except Exception:  # read as a record: the failure becomes its note (records.py)
            return None
        values = None
        if block is not None:
            values = self._block(record._summary, (b"d" if wide else b"f") + block)
        return _tensor, (
            record.name, record.shape, record.dtype, record.device, record.requires_grad, record.grad_fn, record.target,
            stats, values, block_shape, record.missing, record.note, record.extra, record.layout,
        )

    def _values(self, record: TensorRecord, values):
        packed = _pack_values(values)
        if type(packed) is not bytes:
            return packed
        return self._block(getattr(record, "_summary", None), packed)  # a lazy record's: shared by the records of one tensor

    def _block(self, summary, packed: bytes) -> int:
        if summary is not None:
            known = self.shared.get(id(summary))
            if known is not None and known[0] is summary and self.blocks.get(known[1]) == packed:
                return known[1]
        at = self.blocks.add(packed)
        if summary is not None:
            self.shared[id(summary)] = (summary, at)
        return at


def _encode(events: list[Event], blocks: _Slab, shared: dict[int, tuple], own_trees: bool = False) -> bytes:
    out = io.BytesIO()
    _Packer(out, blocks, shared, own_trees).dump(events)
    # Compressed: what a firing repeats (field layout, small integers, empty slots) is most
    # of it (~480 bytes a firing, ~100 compressed; ~60 us a chunk to decompress).
    return zlib.compress(out.getvalue(), 1)


def _decode(chunk: bytes, blocks: _Slab) -> list[Event]:
    _reading.blocks = blocks
    try:
        return pickle.loads(zlib.decompress(chunk))
    finally:
        _reading.blocks = None
