"""The second half of a tensor summary: turning the snapshot taken at firing time
(engine/summaries/stats.py) into a TensorStats and a value block, on first read.

A snapshot owns copies, never the model's tensors, so resolving it later (on any
thread) shows the values the tensor had at its firing. Once resolved, the copies are
dropped and only the numbers and a compact value buffer remain.

Device snapshots (CUDA, or `defer_host`) are resolved together: every pending one on
the thread that took them is copied to the host in one transfer (`flush_pending`), when
the run pauses or ends, when one of them is read, or when too much is pending.
"""

from __future__ import annotations

import math
import threading
import weakref
from array import array
from collections import deque
from dataclasses import dataclass

import numpy as np
import torch

from ..records.records import TensorStats
from ..records.stats_bytes import counts_of, pack_stats, unpack_stats
from . import device_reduce

HIST_BINS = 16
# Device elements pending before a flush is forced mid-run (bounds device memory).
MAX_PENDING_ELEMENTS = 1 << 23

# Transfers from a device snapshot to the host (tests count them; one per flush).
host_transfers = 0
# Bytes of host snapshots and value blocks kept per run (per thread outside runs). Past it, the oldest
# summaries are resolved and their value blocks dropped (their stats stay): memory stays
# bounded however long the run, and recent firings keep their values.
SNAPSHOT_BUDGET_BYTES = 32 << 20

_resolve_lock = threading.Lock()


def empty_stats() -> TensorStats:
    return TensorStats(count=0)


@dataclass(slots=True, frozen=True)
class Head:
    """What is known about a summarised tensor before any value is read (shared by
    every snapshot of tensors of one shape and dtype: never modified)."""

    count: int
    of: str
    approx: bool
    sampled: int
    wide: bool  # values need float64 to stay exact
    shape: list[int]
    block_shape: list[int] | None


# A snapshot's `block` when the snapshot holds the whole tensor (the block is cut out of it).
WHOLE = object()


class _Summary:
    """What a record reads from its summary. Once computed, a summary is kept compact:
    the statistics packed in bytes (`pack_stats`) and the value block as bytes, neither
    of them a Python object the garbage collector has to visit; a TensorStats and the
    list of values are rebuilt on each read (a few microseconds)."""

    __slots__ = ()

    def _compact(self) -> tuple:
        """(packed stats, value block bytes or None, float64 block?, block shape or None)."""
        raise NotImplementedError

    def read_stats(self) -> TensorStats:
        return unpack_stats(self._compact()[0])

    def read_values(self) -> list[float] | None:
        _, block, wide, _ = self._compact()
        return None if block is None else np.frombuffer(block, dtype=np.float64 if wide else np.float32).tolist()

    def read_values_shape(self) -> list[int] | None:
        return self._compact()[3]

    def resolve(self) -> tuple:
        """(TensorStats, values or None, values_shape or None)."""
        return self.read_stats(), self.read_values(), self.read_values_shape()

    def compact(self) -> tuple:
        """(packed stats as records/stats_bytes.py packs them, value block bytes or None,
        float64 block?, block shape or None): what a packed firing keeps (records/held.py).
        Computes the summary if it is pending."""
        return self._compact()

    def settled(self) -> bool:
        """Nothing about this summary will change any more: computed, and its value block
        either dropped by the budget or never wanted. Never computes, never waits for a
        device: a store packs a firing only once all its summaries are settled (held.py)."""
        return False


class Ready(_Summary):
    """A summary with nothing left to compute (an empty tensor)."""

    __slots__ = ("_result",)

    def __init__(self, stats: TensorStats, values: list | None, values_shape: list[int] | None) -> None:
        block = None if values is None else np.asarray(values, dtype=np.float64).tobytes()
        self._result = (pack_stats(stats), block, True, values_shape)

    def _compact(self) -> tuple:
        return self._result

    def nonfinite_counts(self) -> tuple[int, int, int]:
        return _counts_of(self._result[0])

    def settled(self) -> bool:
        return True  # outside every budget: its value block stays


class HostSnapshot(_Summary):
    """A CPU snapshot: the exact non-finite counts, and either the values themselves
    (`values`, small tensors) or exact moments and a sample of the finite values.

    `counts` None: `values` is a private copy of the whole tensor and the counts are
    taken from it when first asked for (exactly what they were at the firing)."""

    __slots__ = ("head", "counts", "values", "moments", "sample", "block", "_result", "__weakref__")

    def __init__(self, head: Head, counts, values: torch.Tensor | None, moments=None, sample: torch.Tensor | None = None,
                 block=None, nbytes: int | None = None) -> None:
        self.head, self.counts, self.values, self.moments, self.sample, self.block = head, counts, values, moments, sample, block
        self._result = None
        if nbytes is None:
            nbytes = _nbytes(values) + _nbytes(sample) + _nbytes(block)
        _current_budget().add(self, nbytes)

    def settled(self) -> bool:
        return self._result is not None and self.block is None

    def drop_values(self) -> None:
        """Keep the statistics, forget the value block (the budget is spent)."""
        if self._result is None:
            self._resolve(keep_block=False)
        with _resolve_lock:
            self.block = None

    def nonfinite_counts(self) -> tuple[int, int, int]:
        counts = self.counts
        if counts is None:
            with _resolve_lock:
                counts = self.counts
                if counts is None:
                    result = self._result
                    counts = self.counts = count_nonfinite(self.values) if result is None else _counts_of(result)
        return counts

    def _compact(self) -> tuple:
        # Once resolved: `_result` the packed statistics, `block` the value block's bytes
        # (None when dropped); no tuple kept for them.
        if self._result is None:
            self._resolve()
        block = self.block
        head = self.head
        return self._result, block, head.wide, None if block is None else head.block_shape

    def _resolve(self, keep_block: bool = True) -> None:
        """`keep_block` False: the value block is about to be dropped (not worth building)."""
        with _resolve_lock:
            if self._result is None:
                head = self.head
                block = self.block if keep_block else None
                if self.values is not None:
                    values = _np(self.values)
                    if self.counts is None:
                        self.counts = _counts_in(values) if self.values.is_floating_point() else _NO_NONFINITE
                    if block is WHOLE:
                        block = _cut(values.reshape(head.shape), head.block_shape)
                    result = finish(head, self.counts, None, values, True, block)
                else:
                    result = finish(head, self.counts, self.moments, _np(self.sample), False, block)
                packed, block, _, _ = _compacted(result, head.wide)
                self.values = self.sample = self.moments = None
                self.block = block
                self._result = packed


class _Budget:
    """Snapshots on the host in the order they got there, with the bytes each holds."""

    def __init__(self) -> None:
        self._entries: deque = deque()
        self._bytes = 0
        self._lock = threading.Lock()

    def add(self, snap: HostSnapshot | DeviceSnapshot, nbytes: int) -> None:
        evict = []
        with self._lock:
            # Weak: a trace that is dropped takes its snapshots with it.
            self._entries.append((weakref.ref(snap), nbytes))
            self._bytes += nbytes
            while self._bytes > SNAPSHOT_BUDGET_BYTES and len(self._entries) > 1:
                old, size = self._entries.popleft()
                self._bytes -= size
                evict.append(old)
        for ref in evict:
            old = ref()
            if old is not None:
                try:
                    old.drop_values()
                except Exception:  # its record says so when read (records.py): not this tensor's failure
                    pass


def _current_budget() -> _Budget:
    budget = getattr(_local, "budget", None)
    if budget is None:
        budget = _local.budget = _Budget()
    return budget


def start_run() -> None:
    """A run starts on this thread: its snapshots get a budget of their own, so the
    snapshots of earlier traces (alive or not yet collected) never spend it."""
    _local.budget = _Budget()


def end_run() -> None:
    """The run on this thread ended: nothing more is added to its budget (let go of its
    list of snapshots; snapshots taken later get a new budget)."""
    _local.budget = None


def _nbytes(t) -> int:
    return t.numel() * t.element_size() if isinstance(t, torch.Tensor) else 0


_NO_NONFINITE = (0, 0, 0)


def _counts_in(values: np.ndarray) -> tuple[int, int, int]:
    """(NaN, +Inf, -Inf) in float64 values (float32 ones, widened: their sum cannot overflow)."""
    # Quiet: +Inf and -Inf sum to NaN, and float64 values can overflow it. numpy's warning
    # would reach the user's stderr, and under `-W error` it raised: the stats were lost.
    with np.errstate(invalid="ignore", over="ignore"):
        total = float(values.sum())
    if math.isfinite(total):
        return _NO_NONFINITE
    return int(np.isnan(values).sum()), int(np.isposinf(values).sum()), int(np.isneginf(values).sum())


def count_nonfinite(t: torch.Tensor) -> tuple[int, int, int]:
    """(NaN, +Inf, -Inf) in `t`, exact. A finite sum proves there are none (a finite
    tensor whose sum overflows takes the slow path)."""
    if not t.is_floating_point():
        return _NO_NONFINITE
    total = (t.sum(dtype=torch.float32) if t.dtype in (torch.float16, torch.bfloat16) else t.sum()).item()
    if math.isfinite(total):
        return _NO_NONFINITE
    return (int(torch.isnan(t).sum()), int(torch.isposinf(t).sum()), int(torch.isneginf(t).sum()))


class DeviceSnapshot(_Summary):
    """A snapshot whose numbers are still device tensors; see `take`."""

    __slots__ = ("head", "vec", "sample", "sample_is_all", "block", "batch", "_host", "_result", "_counts", "__weakref__")

    @classmethod
    def take(cls, head: Head, t: torch.Tensor, step: int, block: torch.Tensor | None, sample_size: int) -> DeviceSnapshot:
        """Partial counts and moments of t.reshape(-1)[::step] (head.sampled elements), a
        sample and the value block, all on the device: nothing here waits for it. One fused
        reduction where triton runs (engine/summaries/device_reduce.py), then the block's copy."""
        self = cls()
        n = head.sampled
        sample_step = max(1, math.ceil(n / sample_size))
        self.vec, self.sample = device_reduce.summarise(t, step, n, sample_step)
        self.sample_is_all = sample_step == 1
        self.block = None if block is None else block.clone()
        self.head, self._host, self._result, self._counts = head, None, None, None
        self.batch = _batch()
        self.batch.add(self)
        return self

    def settled(self) -> bool:
        result = self._result
        return result is not None and result[1] is None

    def elements(self) -> int:
        block = self.block
        return self.vec.numel() + self.sample.numel() + (0 if block is None else block.numel())

    def drop_values(self) -> None:
        """Keep the statistics, forget the value block (the budget is spent; only ever
        asked once the batch has reached the host)."""
        with _resolve_lock:
            host = self._host
            if self._result is None and host is not None:
                self._host = (host[0], host[1], None)  # resolved below without its block
        packed, _, wide, _ = self._compact()
        with _resolve_lock:
            self._result = (packed, None, wide, None)

    def nonfinite_counts(self) -> tuple[int, int, int]:
        counts = self._counts
        if counts is not None:  # read ahead of the rest (read_counts)
            return counts
        self.batch.flush()
        with _resolve_lock:
            result, host = self._result, self._host
        if result is not None:  # compacted: the host copy is gone, the counts are packed
            return _counts_of(result[0])
        return device_reduce.nonfinite(host[0])

    def _compact(self) -> tuple:
        if self._result is not None:
            return self._result
        self.batch.flush()
        with _resolve_lock:
            if self._result is None:
                vec, sample, block = self._host
                counts = device_reduce.nonfinite(vec)
                moments, whole = device_reduce.moments(vec)
                if not whole:  # a float64 sum overflowed: mean, std, norm from the sample
                    moments = None if self.sample_is_all else _sampled_moments(moments, sample)
                self._result = _compacted(finish(self.head, counts, moments, sample, self.sample_is_all, block), self.head.wide)
                self._host = None
            return self._result


def _sampled_moments(exact: tuple, sample: np.ndarray) -> tuple:
    """The exact count, min and max, with mean, std and norm estimated from an evenly
    strided sample, scaled by its largest magnitude (finite float64 values too large for
    the device's sums of squares: beyond ~1e154)."""
    n, lo, hi = exact[:3]
    finite = sample[np.isfinite(sample)]
    scale = max(abs(lo), abs(hi)) or 1.0
    x = finite / scale
    mean = float(x.mean()) * scale
    std = float(x.std(ddof=1)) * scale if x.size > 1 else None
    return n, lo, hi, mean, std, math.sqrt(float(np.dot(x, x)) * n / max(x.size, 1)) * scale


class _Batch:
    """Device snapshots taken on one thread since the last flush. Once on the host they
    count against the snapshot budget of the run that took them, as host snapshots do
    (a long run on the GPU keeps the value blocks of its recent firings only)."""

    def __init__(self, budget: _Budget) -> None:
        self.budget = budget
        self.members: list[DeviceSnapshot] = []
        self.elements = 0
        self.closed = False
        self.lock = threading.Lock()

    def add(self, snap: DeviceSnapshot) -> None:
        with self.lock:
            late = self.closed
            if not late:
                self.members.append(snap)
                self.elements += snap.elements()
                full = self.elements > MAX_PENDING_ELEMENTS
        if late:
            # Another thread (the app reading a record) flushed this batch after the snapshot
            # picked it: it joins this thread's next one, or it would never be copied.
            snap.batch = _batch()
            snap.batch.add(snap)
        elif full:
            self.flush()

    def discard(self, ids: set[int]) -> None:
        with self.lock:
            kept = []
            for m in self.members:
                if id(m) in ids:
                    m.vec = m.sample = m.block = None
                else:
                    kept.append(m)
            self.members = kept
            self.elements = sum(m.elements() for m in kept)

    def flush(self) -> None:
        """Copy every member's numbers, sample and block to the host in one transfer."""
        global host_transfers
        with self.lock:
            if self.closed:
                return
            self.closed = True
            members, self.members = self.members, []
            if not members:
                return
            parts = []
            for m in members:
                parts += [m.vec.reshape(-1), m.sample] + ([m.block.reshape(-1).double()] if m.block is not None else [])
            host = torch.cat(parts).cpu().numpy()
            host_transfers += 1
            at = 0
            sizes = []
            for m in members:
                pieces = []
                for n in (m.vec.numel(), m.sample.numel(), 0 if m.block is None else m.block.numel()):
                    pieces.append(host[at : at + n])
                    at += n
                vec, sample, block = pieces
                m._host = (vec, sample, block if m.block is not None else None)
                m.vec = m.sample = m.block = None
                sizes.append(vec.nbytes + sample.nbytes + block.nbytes)
        # Outside the lock: an eviction resolves members of this very batch.
        for m, nbytes in zip(members, sizes):
            self.budget.add(m, nbytes)


_local = threading.local()


def _batch() -> _Batch:
    batch = getattr(_local, "batch", None)
    if batch is None or batch.closed:
        batch = _local.batch = _Batch(_current_budget())
    return batch


def read_counts(summaries) -> None:
    """The non-finite counts of these summaries' pending device snapshots, copied to the
    host in one transfer per device: their count columns only, not their samples or
    value blocks (hooktui.guard reads this at a step's end; engine/summaries/device_reduce.py)."""
    global host_transfers
    by_device: dict = {}
    for s in summaries:
        if isinstance(s, DeviceSnapshot) and s._counts is None and s.vec is not None:
            by_device.setdefault(s.vec.device, {})[id(s)] = s
    for pending in by_device.values():
        snaps = list(pending.values())
        columns = slice(device_reduce.NAN, device_reduce.NEGINF + 1)
        host = torch.cat([s.vec.reshape(-1, device_reduce.COLUMNS)[:, columns] for s in snaps]).cpu().numpy()
        host_transfers += 1
        at = 0
        for s in snaps:
            rows = s.vec.numel() // device_reduce.COLUMNS
            s._counts = tuple(int(v) for v in host[at : at + rows].sum(axis=0))
            at += rows


def discard_pending(summaries) -> None:
    """Forget these pending device snapshots without copying them (a guard's clean step:
    nobody will read them); they no longer count toward a forced flush."""
    by_batch: dict = {}
    for s in summaries:
        if isinstance(s, DeviceSnapshot) and s.vec is not None:
            by_batch.setdefault(id(s.batch), (s.batch, set()))[1].add(id(s))
    for batch, ids in by_batch.values():
        batch.discard(ids)


def flush_pending() -> None:
    """Copy this thread's pending device snapshots to the host (the run paused or ended)."""
    batch = getattr(_local, "batch", None)
    if batch is not None:
        batch.flush()


def _compacted(result: tuple, wide: bool) -> tuple:
    stats, values, values_shape = result
    return pack_stats(stats), None if values is None else values.tobytes(), wide, values_shape


# TensorStats as bytes (records/stats_bytes.py: a packed firing keeps the same bytes).
_counts_of = counts_of


def finish(head: Head, counts, moments, sample: np.ndarray, sample_is_all: bool, block) -> tuple:
    """(TensorStats, value buffer, block shape) from a snapshot's host numbers.

    `moments` = (finite count, min, max, mean, std, norm) when known exactly, else None:
    then `sample` holds every value and they are computed here, in float64, scaled by the
    largest magnitude so finite values never overflow ([0, finfo(float32).min] has a
    finite mean)."""
    nan, posinf, neginf = counts
    finite = sample[np.isfinite(sample)] if (nan or posinf or neginf or not sample_is_all) else sample
    x = None  # the finite values scaled by the largest magnitude
    if moments is None:
        n_finite = finite.size
        lo = hi = mean = std = norm = None
        if n_finite:
            lo, hi = float(finite.min()), float(finite.max())
            scale = max(abs(lo), abs(hi)) or 1.0
            x = finite / scale
            mean_x = float(x.sum()) / n_finite
            mean = mean_x * scale
            if n_finite > 1:
                centred = x - mean_x
                std = math.sqrt(float(np.dot(centred, centred)) / (n_finite - 1)) * scale
            norm = math.sqrt(float(np.dot(x, x))) * scale
    else:
        n_finite, lo, hi, mean, std, norm = moments
    stats = TensorStats(
        count=head.count,
        finite=n_finite,
        min=lo,
        max=hi,
        mean=mean,
        std=std,
        absmax=None if lo is None else max(abs(lo), abs(hi)),
        norm=norm,
        nan=nan,
        posinf=posinf,
        neginf=neginf,
        nonfinite=nan + posinf + neginf,
        approx=head.approx,
        sampled=head.sampled,
        of=head.of,
    )
    if n_finite:
        scale = max(abs(lo), abs(hi)) or 1.0
        if x is None:
            x = finite / scale
        lo_s = lo / scale
        span = max(hi / scale - lo_s, np.finfo(np.float64).tiny)
        # Non-negative (lo is the minimum): truncation is floor; the maximum lands in the last bin.
        bins = ((x - lo_s) / span * HIST_BINS).astype(np.intp)
        np.minimum(bins, HIST_BINS - 1, out=bins)
        stats.hist = np.bincount(bins, minlength=HIST_BINS).tolist()
        stats.hist_range = [lo, hi]
        stats.zeros = _zeros(finite, n_finite, lo, hi, sample_is_all)
        if not sample_is_all:
            stats.hist_sampled = int(finite.size)
    values = None
    if block is not None:
        values = array("d" if head.wide else "f")
        values.frombytes(np.ascontiguousarray(_np(block), dtype=np.float64 if head.wide else np.float32).tobytes())
    return stats, values, head.block_shape if block is not None else None


def _zeros(finite: np.ndarray, n_finite: int, lo: float, hi: float, exact: bool) -> int:
    """Zero count: exact from the values when they are all there or the range decides it,
    else the sample's share scaled to the finite count."""
    if lo > 0 or hi < 0:
        return 0
    if lo == 0 and hi == 0:
        return n_finite
    zeros = int(np.count_nonzero(finite == 0))
    return zeros if exact or not finite.size else round(zeros * n_finite / finite.size)


def _cut(values: np.ndarray, keep: list[int]) -> np.ndarray:
    return values[tuple(slice(0, k) for k in keep)]


def _np(t) -> np.ndarray:
    """A CPU tensor (any dtype) or array as float64 numpy."""
    if isinstance(t, (np.ndarray, np.generic)):
        return np.asarray(t, dtype=np.float64).reshape(-1)
    return t.detach().reshape(-1).to(torch.float64).numpy()
