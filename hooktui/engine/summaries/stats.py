"""Tensor summaries, split by when the work is done.

At the firing (this file), per tensor, only what must be exact at once or cannot be
recovered later:

- the exact count of NaN, +Inf and -Inf. One sum over the tensor proves the common
  case (a finite sum means no NaN and no Inf); only a tensor whose sum is not finite is
  counted element by element;
- a private snapshot: the tensor itself, copied, when it has at most `snapshot_size`
  elements; a larger one gets its exact min, max, sum and sum of squares (one pass
  each, by whichever of torch and numpy is faster) and an evenly strided sample for the
  histogram and the zero count;
- a copy of the leading block of values (at most `max_values`).

Everything else (mean, std, norm, histogram, the value list) is computed from the
snapshot when a record is first read (engine/summaries/lazy_stats.py). A firing nobody looks at
costs little, and what is shown is the tensor as it was at its firing even when the
model modifies it in place afterwards (`nn.ReLU(inplace=True)` after a BatchNorm).

Above `max_exact` elements the statistics come from an evenly strided sample of that
many (flagged `approx`); the non-finite counts stay exact over the whole tensor.

On a device other than the CPU (or with `defer_host=True`) nothing at firing time reads
a value back: counts and moments stay on the device and every pending summary is
copied to the host in one transfer when the run pauses or ends or a record is read.

A tensor seen again unchanged (same object, same version counter: one module's output
is the next one's input) shares the summary of its first appearance.
"""

from __future__ import annotations

import math
import os
import threading
import weakref
from dataclasses import dataclass, field

import numpy as np
import torch

from ..autograd.nodes import name_of
from ..records.notes import joined
from ..records.records import LazyTensorRecord, TensorRecord
from . import functorch_values, layouts, lazy_stats, sharded

HIST_BINS = lazy_stats.HIST_BINS
_is_functorch_wrapped = None if functorch_values._F is None else functorch_values._F.is_functorch_wrapped_tensor


# Set (to anything but 0): CPU tensors take the device path (DeviceSnapshot, batched, one
# host copy per pause) wherever StatsOptions does not say `defer_host` itself: record,
# trace, the app, the hunt, guard, debug. The CUDA path, testable without a GPU.
DEVICE_PATH_ENV = "HOOKTUI_DEVICE_PATH"


def device_path_forced() -> bool:
    return os.environ.get(DEVICE_PATH_ENV, "").strip() not in ("", "0")


@dataclass(frozen=True)
class StatsOptions:
    max_exact: int = 1 << 20  # elements summarised exactly; larger tensors are sampled
    max_values: int = 1024  # values kept for the values pane
    keep_values: bool = True
    # Tensors up to this many elements are copied whole at firing time; larger ones keep
    # exact moments and a sample of this many elements for the histogram.
    snapshot_size: int = 4096
    # Never read a value back at firing time, even on the CPU (the CUDA path). The default
    # comes from HOOKTUI_DEVICE_PATH: `make test` runs its second pass with it set.
    defer_host: bool = field(default_factory=device_path_forced)


class _Kind:
    """What every tensor of one shape, dtype, device and layout has in common, worked
    out once: the strings and shape list records share (interned: a run's records
    hold one copy of each), and the Head of its snapshots for each set of options."""

    __slots__ = ("shape", "dtype", "device", "numel", "strided", "wide", "nbytes", "heads")

    def __init__(self, tensor: torch.Tensor) -> None:
        self.shape = list(tensor.shape)
        self.dtype = _dtype_name(tensor.dtype)
        self.device = _intern(str(tensor.device))
        self.numel = tensor.numel()
        self.strided = tensor.layout == torch.strided and tensor.device.type != "meta"
        self.wide = tensor.dtype in _WIDE
        self.nbytes = self.numel * tensor.element_size()
        self.heads: dict[tuple, lazy_stats.Head] = {}

    def small_head(self, options: StatsOptions) -> lazy_stats.Head:
        """The Head of a snapshot that copies the whole tensor."""
        key = (options.max_values, options.keep_values)
        head = self.heads.get(key)
        if head is None:
            block_shape = leading_block_shape(self.shape, options.max_values) if options.keep_values else None
            head = self.heads[key] = lazy_stats.Head(count=self.numel, of="values", approx=False, sampled=self.numel,
                                                     wide=self.wide, shape=self.shape, block_shape=block_shape)
        return head


# (shape, dtype, device, layout) -> _Kind; a model has a few dozen of them.
_KINDS: dict[tuple, _Kind] = {}
_KINDS_MAX = 4096
_STRINGS: dict[str, str] = {}


def _intern(text: str) -> str:
    return _STRINGS.setdefault(text, text)


def _kind(tensor: torch.Tensor) -> _Kind:
    key = (tensor.shape, tensor.dtype, tensor.device, tensor.layout)
    kind = _KINDS.get(key)
    if kind is None:
        if len(_KINDS) >= _KINDS_MAX:
            _KINDS.clear()
        kind = _KINDS[key] = _Kind(tensor)
    return kind


def describe(name: str, tensor: torch.Tensor, options: StatsOptions | None = None, **extra) -> TensorRecord:
    """A record for `tensor` whose stats and values are those it has now, computed on first read."""
    if options is None:
        options = StatsOptions()
    # Each check below is inlined for a plain tensor: this runs for every tensor of every firing.
    if _is_functorch_wrapped is not None and _is_functorch_wrapped(tensor):
        # It dies with the transform: the value under it is recorded (functorch_values.py).
        tensor, why = functorch_values.unwrapped(tensor)
        note = extra.get("note")
        extra = {**extra, "note": joined(note, why)}
    grad_fn = tensor.grad_fn
    requires_grad = tensor.requires_grad
    if type(tensor) is not torch.Tensor and sharded.is_dtensor(tensor):
        # This rank's part only, said as such: reading the whole is a collective (sharded.py).
        part = sharded.local(tensor)
        why = sharded.describe_placement(tensor, part)
        note = extra.get("note")
        extra = {**extra, "note": joined(note, why)}
        tensor = part
    recent = getattr(_local, "recent", None) or _recent()
    # Seen again unchanged (one module's output is the next one's input): its summary and kind.
    entry = recent.entries.get(id(tensor))
    if entry is not None and entry[0]() is tensor and entry[1] == tensor._version and (entry[2] is options or entry[2] == options):
        summary, kind = entry[3], entry[4]
        shape, layout = kind.shape, None
    else:
        # A nested tensor has no shape for _kind to read; a sparse one no strides (layouts.py).
        kind = None if tensor.is_nested else _KINDS.get((tensor.shape, tensor.dtype, tensor.device, tensor.layout)) or _kind(tensor)
        if kind is None or not kind.strided and layouts.is_laid_out(tensor):
            # Summarised through the dense tensor of its stored values.
            shape, tensor, layout = layouts.stored_values(tensor, options.max_values)
            kind = _kind(tensor)
            summary = _snapshot(tensor, options, kind)
        elif not kind.strided:
            record = TensorRecord(
                name=name, shape=kind.shape, dtype=kind.dtype, device=kind.device,
                requires_grad=requires_grad, grad_fn=None if grad_fn is None else name_of(grad_fn), **extra,
            )
            record.note = f"{tensor.layout} tensor: no stats"
            return record
        else:
            shape, layout = kind.shape, None
            # detach(): nothing below is recorded by autograd, without a no_grad context's cost.
            summary = _snapshot(tensor.detach(), options, kind)
            recent.put(tensor, options, summary, kind)
    record = LazyTensorRecord.__new__(LazyTensorRecord)
    record.name, record.shape, record.dtype, record.device = name, shape, kind.dtype, kind.device
    record.layout = layout
    record.requires_grad, record.grad_fn = requires_grad, None if grad_fn is None else name_of(grad_fn)
    if extra:
        record.target, record.missing, record.note = extra.get("target"), extra.get("missing"), extra.get("note")
        record.extra = extra.get("extra", False)
    else:
        record.target = record.missing = record.note = None
        record.extra = False
    record._summary = summary
    return record


def missing(name: str, reason: str, **extra) -> TensorRecord:
    return TensorRecord(name=name, shape=None, missing=reason, **extra)


def snapshot(t: torch.Tensor, options: StatsOptions):
    """The firing-time part of a summary (see the module docstring)."""
    return _snapshot(t, options, _kind(t))


def _snapshot(t: torch.Tensor, options: StatsOptions, kind: _Kind):
    numel = kind.numel
    if numel == 0:
        return lazy_stats.Ready(lazy_stats.empty_stats(), [], list(kind.shape))
    keep = options.keep_values
    if numel <= options.snapshot_size and numel <= options.max_exact and not options.defer_host \
            and kind.device == "cpu" and not t.is_complex():
        # The common case, kept short (it runs for most tensors of most firings): a copy
        # of the whole tensor, which also holds the value block; the non-finite counts
        # are taken from the copy when first asked for.
        return lazy_stats.HostSnapshot(kind.small_head(options), None, t.clone(),
                                       block=lazy_stats.WHOLE if keep else None, nbytes=kind.nbytes)
    shape = kind.shape
    wide = kind.wide
    of = "values"
    if t.is_complex():
        t = t.abs()
        of = "abs"
    on_device = options.defer_host or t.device.type != "cpu"
    # On a device the fused reduction reads every element in one pass (a sampled read would
    # miss NaNs between its strides): exact there whatever the size. The CPU samples past max_exact.
    approx = numel > options.max_exact and not on_device
    step = math.ceil(numel / options.max_exact) if approx else 1  # an evenly strided sample of max_exact
    key = (of, options.max_values, keep, options.max_exact, on_device)
    head = kind.heads.get(key)
    if head is None:
        block_shape = leading_block_shape(shape, options.max_values) if keep else None
        head = kind.heads[key] = lazy_stats.Head(
            count=numel, of=of, approx=approx, sampled=math.ceil(numel / step), wide=wide, shape=shape, block_shape=block_shape)
    block_shape = head.block_shape
    if on_device:
        # Before any reshape: the device reduction reads a non-contiguous tensor through its strides.
        return lazy_stats.DeviceSnapshot.take(head, t, step, _block(t, block_shape) if keep else None, options.snapshot_size)
    flat = t.reshape(-1)
    work = flat[::step] if approx else flat
    counts, total = _exact_counts(flat)
    if work.numel() <= options.snapshot_size:
        if keep and not approx:
            block = lazy_stats.WHOLE  # the copy below holds the block: cut it out when read
        elif keep:
            block = _block(t, block_shape).clone()
        else:
            block = None
        return lazy_stats.HostSnapshot(head, counts, work.clone(), block=block)
    block = _block(t, block_shape).clone() if keep else None
    return lazy_stats.HostSnapshot(head, counts, None, *_moments(work, any(counts), options.snapshot_size, None if approx else total), block=block)


_NO_NONFINITE = (0, 0, 0)


def _exact_counts(flat: torch.Tensor) -> tuple[tuple[int, int, int], float | None]:
    """(NaN, +Inf, -Inf) in `flat`, exact, and its sum when finite (float tensors). A finite
    sum proves there are none (a finite tensor whose sum overflows takes the slow path)."""
    if not flat.is_floating_point():
        return _NO_NONFINITE, None
    total = (flat.sum(dtype=torch.float32) if flat.dtype in (torch.float16, torch.bfloat16) else flat.sum()).item()
    if math.isfinite(total):
        return _NO_NONFINITE, total
    # In blocks: torch.isnan and torch.isposinf of the whole would each make a temporary as
    # large as the tensor or more (+862 MB for 1e8 float32 elements; docs/benchmarks.md).
    nan = posinf = neginf = 0
    for block in flat.split(_COUNT_BLOCK):
        nan += int(torch.isnan(block).sum())
        posinf += int(torch.isposinf(block).sum())
        neginf += int(torch.isneginf(block).sum())
    return (nan, posinf, neginf), None


_COUNT_BLOCK = 1 << 20  # elements counted at once: temporaries of a few MB


def _moments(work: torch.Tensor, has_nonfinite: bool, sample_size: int, total: float | None = None):
    """Exact (finite count, min, max, mean, std, norm) of a large tensor's finite values,
    and an evenly strided sample of them: a few full passes, all on the CPU. `total`: the
    sum of `work`, when the non-finite check already took it."""
    if not work.is_floating_point():
        work = work.double()  # integers and bools: exact in float64, no overflow
    elif work.dtype in (torch.float16, torch.bfloat16):
        work = work.float()
    if has_nonfinite:
        work = work[torch.isfinite(work)]
    n = work.numel()
    sample = _strided_sample(work, n, sample_size)
    if n == 0:
        return (0, None, None, None, None, None), sample
    lo, hi, sumsq = _min_max_sumsq(work)
    if total is None or has_nonfinite:
        total = work.sum().item()
    scale = max(abs(lo), abs(hi))
    if not (math.isfinite(total) and math.isfinite(sumsq)):
        # Finite values whose float32 sums overflow ([1e20, -1e20]): redo them in float64, scaled.
        scaled = work.double() / scale
        total = scaled.sum().item() * scale
        sumsq = None
        norm = torch.dot(scaled, scaled).sqrt().item() * scale
    else:
        norm = math.sqrt(sumsq)
    mean = total / n
    std = None
    if n > 1:
        var = (sumsq - total * total / n) / (n - 1) if sumsq is not None else -1.0
        # The one-pass formula loses precision when the mean dwarfs the spread: then two
        # exact passes in float64.
        if var * 100 < (sumsq or math.inf) / n or var < 0:
            var = (torch.std(work.double() / scale).item() * scale) ** 2 if scale > 0 else 0.0
        std = math.sqrt(var)
    return (n, lo, hi, mean, std, norm), sample


def _min_max_sumsq(work: torch.Tensor) -> tuple[float, float, float]:
    """min, max and the sum of squares of a 1-D CPU float tensor of finite values. numpy's
    min, max and dot (BLAS) each take half or less of the time of torch.aminmax and
    torch.dot on the CPU, measured with one torch thread (docs/benchmarks.md); torch's
    sum stays (numpy's is slower). Same precision: the dot accumulates in the dtype, as
    torch.dot does."""
    try:
        values = work.numpy()
    except (RuntimeError, TypeError):  # a tensor numpy cannot view (e.g. a negative-bit view)
        lo_t, hi_t = torch.aminmax(work)
        return lo_t.item(), hi_t.item(), torch.dot(work, work).item()
    if values.flags.c_contiguous:
        lo, hi = values.min(), values.max()
    else:  # an evenly strided sample: torch's one-pass aminmax is the faster there
        lo_t, hi_t = torch.aminmax(work)
        lo, hi = lo_t.item(), hi_t.item()
    with np.errstate(over="ignore"):  # an overflow is redone in float64 by the caller, not warned about
        return float(lo), float(hi), float(np.dot(values, values))


class _RecentSummaries:
    """The last tensors summarised on this thread, by identity and version counter
    (which every in-place op through torch bumps), so an unchanged tensor seen again
    reuses its summary. A weak reference proves the id was not recycled."""

    SIZE = 64

    def __init__(self) -> None:
        # id -> (weak reference, version, options, summary, _Kind); describe() reads it inline.
        self.entries: dict[int, tuple] = {}

    def put(self, tensor: torch.Tensor, options: StatsOptions, summary, kind: _Kind) -> None:
        try:
            version = tensor._version
        except RuntimeError:
            # An inference tensor ("Inference tensors do not track version counter"): an
            # unchanged one cannot be told from one changed in place, so it is not kept, and
            # is summarised afresh each time it is seen.
            return
        entries = self.entries
        entries.pop(id(tensor), None)
        entries[id(tensor)] = (weakref.ref(tensor), version, options, summary, kind)
        if len(entries) > self.SIZE:
            del entries[next(iter(entries))]


_local = threading.local()


def _recent() -> _RecentSummaries:
    recent = getattr(_local, "recent", None)
    if recent is None:
        recent = _local.recent = _RecentSummaries()
    return recent


def forget_recent() -> None:
    """A run ended on this thread: let go of its last summaries (kept, they and their
    snapshots would stay among the run's freed memory after its firings are packed)."""
    _local.recent = None


_DTYPE_NAMES: dict[torch.dtype, str] = {}


def _dtype_name(dtype: torch.dtype) -> str:
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = _intern(str(dtype).removeprefix("torch."))
    return name


# Dtypes whose values need float64 on the host to stay exact.
_WIDE = (torch.float64, torch.int64, torch.int32, torch.uint8, torch.int16, torch.int8, torch.complex128)


def leading_block_shape(shape: list[int], budget: int) -> list[int]:
    """The shape k of the block t[:k0, :k1, ...] kept for the values pane, with the
    product of k at most `budget`.

    The last two dimensions get most of the budget (they form the 2-D grid in the
    values pane); leading dimensions keep as many indices as what is left allows.
    """
    if math.prod(shape) <= budget:
        return list(shape)
    keep = [1] * len(shape)
    remaining = budget
    for dim in reversed(range(len(shape))):
        # Inner dims first: up to 32 columns and 32 rows, then whatever fits.
        cap = 32 if dim >= len(shape) - 2 else shape[dim]
        keep[dim] = max(1, min(shape[dim], cap, remaining))
        remaining = max(1, remaining // keep[dim])
    return keep


def _block(t: torch.Tensor, keep: list[int]) -> torch.Tensor:
    """t[:keep[0], :keep[1], ...]: the same strides and offset, a smaller shape (one view
    instead of a narrow per dimension)."""
    return t.as_strided(keep, t.stride(), t.storage_offset())


# (elements, step, device) -> the indices of an evenly strided sample: gathering with them
# costs less than copying a strided slice.
_SAMPLE_INDICES: dict[tuple, torch.Tensor] = {}


def _strided_sample(work: torch.Tensor, n: int, sample_size: int) -> torch.Tensor:
    """work[::step], copied, with step = ceil(n / sample_size) (every element when n fits)."""
    step = max(1, math.ceil(n / sample_size))
    if step == 1 or work.dim() != 1:
        return work[::step].clone()
    key = (n, step, work.device)
    index = _SAMPLE_INDICES.get(key)
    if index is None:
        if len(_SAMPLE_INDICES) >= 256:
            _SAMPLE_INDICES.clear()
        index = _SAMPLE_INDICES[key] = torch.arange(0, n, step, device=work.device)
    return work.index_select(0, index)
