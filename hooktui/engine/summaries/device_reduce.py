"""One tensor's firing-time summary on its device, in as few kernel launches as possible.

A device snapshot (engine/summaries/lazy_stats.py) needs, at firing time and without reading
anything back: the exact NaN / +Inf / -Inf counts, the finite values' count, min, max
and moments, and an evenly strided sample (the histogram and the zero count). Written
as torch ops that was ~33 launches per tensor, each costing microseconds of CPU time
whatever the tensor's size (issue 22). Here it is one Triton kernel where `triton`
imports and the tensor is on CUDA: it reads the tensor once, through its strides (a
non-contiguous tensor is not copied first), writes the sample as it goes, and leaves per
program partials that the host combines at flush time (`moments`, `nonfinite`). With the value
block's copy that is 2 launches per tensor. Without triton a short torch-op fallback
produces the same partials (one row).

Partials, one row per program, float64 (counts stay exact below 2^53):
  finite count, min, max, sum and sum of squares of (x - shift), sum of x², NaN, +Inf, -Inf, shift
The shift is the tensor's first element when finite (else 0): sums of shifted values
keep the variance's precision when the mean dwarfs the spread. Every dtype is widened
to float64 before any arithmetic, so finite float32/16 values never overflow a sum.

HOOKTUI_TRITON_INTERPRET=1 (tests) runs the kernel through Triton's interpreter on CPU
tensors: the same code, checked without a GPU.
"""

from __future__ import annotations

import contextlib
import math
import os
import warnings

import torch

COLUMNS = 10
COUNT, MIN, MAX, SUM, SUMSQ, SQUARES, NAN, POSINF, NEGINF, SHIFT = range(COLUMNS)
BLOCK = 1024
MAX_PROGRAMS = 64  # bounds the partials: at most 64 rows of 10 per tensor
MAX_DIMS = 4  # strides the kernel follows; more (after merging) are copied flat first

_INTERPRET = os.environ.get("HOOKTUI_TRITON_INTERPRET") == "1"
if _INTERPRET:
    # Read by triton as it is imported (triton.language's own helpers) and as kernels run.
    os.environ["TRITON_INTERPRET"] = "1"

triton = tl = None
# None: not tried yet; False: triton is missing or its kernel failed to build here.
_available: bool | None = None
# Why the torch fallback is used where triton was wanted (benchmarks print it).
fallback_reason: str | None = None


def uses_triton(t: torch.Tensor) -> bool:
    if not (t.is_cuda or (_INTERPRET and t.device.type == "cpu")):
        return False
    global _available, triton, tl, fallback_reason
    if _available is None:
        # Imported on first need: a second or so, paid only where a device tensor is summarised.
        try:
            import triton
            import triton.language as tl
            _available = True
        except ImportError as exc:
            _available, fallback_reason = False, f"triton does not import: {exc}"
    return _available


def summarise(t: torch.Tensor, step: int, n: int, sample_step: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(partials, sample) of `work` = t.reshape(-1)[::step] (n elements), the sample being
    work[::sample_step] as float64. Nothing waits for the device."""
    if uses_triton(t):
        try:
            return _triton(t, step, n, sample_step)
        except Exception as exc:  # noqa: BLE001 - a compiler or driver error: never the user's model's fault
            _fallback(exc)
    return _torch(t, step, sample_step)


def nonfinite(partials) -> tuple[int, int, int]:
    """(NaN, +Inf, -Inf) from host partials (a numpy array of rows)."""
    rows = partials.reshape(-1, COLUMNS)
    return tuple(int(v) for v in rows[:, NAN:NEGINF + 1].sum(axis=0))


def moments(partials) -> tuple[tuple, bool]:
    """(finite count, min, max, mean, std, norm) from host partials, and whether they are
    whole: False when a float64 sum overflowed (finite float64 values beyond ~1e154),
    then mean, std and norm are None and the caller computes them from its sample."""
    rows = partials.reshape(-1, COLUMNS)
    n = int(rows[:, COUNT].sum())
    if n == 0:
        return (0, None, None, None, None, None), True
    lo, hi = float(rows[:, MIN].min()), float(rows[:, MAX].max())
    shift = float(rows[0, SHIFT])
    s, q, squares = float(rows[:, SUM].sum()), float(rows[:, SUMSQ].sum()), float(rows[:, SQUARES].sum())
    if not (math.isfinite(s) and math.isfinite(q) and math.isfinite(squares)):
        return (n, lo, hi, None, None, None), False
    mean = shift + s / n
    std = math.sqrt(max(q - s * s / n, 0.0) / (n - 1)) if n > 1 else None
    # Rounding may put the mean a hair outside [lo, hi] (all values equal): clamp it.
    return (n, lo, hi, min(max(mean, lo), hi), std, math.sqrt(squares)), True


# -- torch fallback -------------------------------------------------------------------
_INF = math.inf


def _torch(t: torch.Tensor, step: int, sample_step: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The same partials as one row, in few torch ops (launches counted in the tests)."""
    flat = t.reshape(-1)
    work = flat[::step] if step > 1 else flat
    x = work.to(torch.float64)
    sample = x[::sample_step].clone() if sample_step > 1 else (x.clone() if x is work else x)
    # (x - x) is 0 for a finite x and NaN for NaN and ±Inf: one op tells the finite ones.
    fin = (x - x) == 0
    shift = torch.where(fin[:1], x[:1], 0.0)
    y = torch.where(fin, x - shift, 0.0)
    z = torch.where(fin, x, 0.0)
    # Finite, NaN, +Inf and -Inf counted by one sum (bincount would be fewer passes, but
    # it refuses to run on CUDA under torch.use_deterministic_algorithms).
    counts = torch.stack([fin, x != x, x == _INF, x == -_INF]).sum(1, dtype=torch.float64)
    rows = torch.stack([
        counts[0], torch.where(fin, x, _INF).amin(), torch.where(fin, x, -_INF).amax(), y.sum(), torch.dot(y, y),
        torch.dot(z, z), counts[1], counts[2], counts[3], shift.reshape(()),
    ])
    return rows, sample


# -- triton ---------------------------------------------------------------------------
def _merged_dims(t: torch.Tensor) -> tuple[list[int], list[int]] | None:
    """Sizes and strides of `t` with size-1 dims dropped and dims that are contiguous
    with each other merged (row-major order kept); None when more than MAX_DIMS remain."""
    sizes, strides = [], []
    for size, stride in zip(t.shape, t.stride()):
        if size == 1:
            continue
        if sizes and strides[-1] == stride * size:
            sizes[-1] *= size
            strides[-1] = stride
        else:
            sizes.append(size)
            strides.append(stride)
    if len(sizes) > MAX_DIMS:
        return None
    pad = MAX_DIMS - len(sizes)
    return [1] * pad + sizes, [0] * pad + strides


def _triton(t: torch.Tensor, step: int, n: int, sample_step: int) -> tuple[torch.Tensor, torch.Tensor]:
    if t.is_neg():
        t = t.resolve_neg()  # a lazy negation (torch._neg_view): the kernel reads raw memory
    dims = _merged_dims(t)
    if dims is None:  # rare: a non-contiguous view of more than 4 dims
        t = t.reshape(-1)
        dims = _merged_dims(t)
    sizes, strides = dims
    blocks = triton.cdiv(n, BLOCK)
    programs = min(blocks, MAX_PROGRAMS)
    chunks = triton.cdiv(blocks, programs)
    partials = torch.empty((programs, COLUMNS), dtype=torch.float64, device=t.device)
    sample = torch.empty(triton.cdiv(n, sample_step), dtype=torch.float64, device=t.device)
    if t.dtype == torch.bool:
        t = t.view(torch.uint8)  # same bytes; the kernel widens either to float64
    args = ((programs,), t, n, step, sizes[1], sizes[2], sizes[3], *strides, sample, sample_step, partials, chunks)
    if t.is_cuda and t.device.index != torch.cuda.current_device():
        with torch.cuda.device(t.device):  # triton launches on the current device
            _launch(*args)
    else:
        _launch(*args)
    return partials, sample


def _launch(grid, *args) -> None:
    """The one kernel launch (tests count calls of this)."""
    with _quiet():
        # 8 warps: 4 elements a thread, nine float64 accumulators each, without spilling.
        _kernel()[grid](*args, BLOCK=BLOCK, num_warps=8)


def _fallback(exc: Exception) -> None:
    """The kernel failed to build or run on this machine: say so once, use torch ops from now on."""
    global _available, fallback_reason
    _available, fallback_reason = False, f"the triton kernel failed: {type(exc).__name__}: {exc}"
    warnings.warn(f"hooktui: {fallback_reason}; device summaries use torch ops (slower)", RuntimeWarning, stacklevel=3)


_compiled = None
_INT_ARGS = ["n", "step", "d1", "d2", "d3", "s0", "s1", "s2", "s3", "sample_step", "chunks"]


def _quiet():
    """The interpreter computes with numpy, which warns at inf - inf (the finite test)."""
    if _INTERPRET:
        import numpy as np

        return np.errstate(invalid="ignore", over="ignore")
    return contextlib.nullcontext()


def _kernel():
    """The kernel, jitted on first use (or wrapped for the interpreter)."""
    global _compiled
    if _compiled is None:
        # Sizes, strides and steps vary from tensor to tensor: not specialised on (triton
        # would compile a kernel per combination of 1s and multiples of 16), so one kernel
        # per dtype is built, on its first use. An interpreted function under TRITON_INTERPRET.
        _compiled = triton.jit(_partials_kernel, do_not_specialize=_INT_ARGS)
    return _compiled


def _partials_kernel(x_ptr, n, step, d1, d2, d3, s0, s1, s2, s3, sample_ptr, sample_step, out_ptr, chunks,
                     BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    lanes = tl.arange(0, BLOCK)
    first = tl.load(x_ptr).to(tl.float64)
    shift = tl.where(first - first == 0, first, 0.0)
    count = tl.zeros([BLOCK], tl.float64)
    lo = tl.full([BLOCK], float("inf"), tl.float64)
    hi = tl.full([BLOCK], float("-inf"), tl.float64)
    total = tl.zeros([BLOCK], tl.float64)
    total_sq = tl.zeros([BLOCK], tl.float64)
    squares = tl.zeros([BLOCK], tl.float64)
    nan = tl.zeros([BLOCK], tl.float64)
    posinf = tl.zeros([BLOCK], tl.float64)
    neginf = tl.zeros([BLOCK], tl.float64)
    for c in range(0, chunks):
        i = (pid * chunks + c).to(tl.int64) * BLOCK + lanes
        valid = i < n
        # The element's place in t: the flat index, unravelled over t's (merged) dims.
        j = i * step
        i3 = j % d3
        j = j // d3
        i2 = j % d2
        j = j // d2
        i1 = j % d1
        i0 = j // d1
        x = tl.load(x_ptr + i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3, mask=valid, other=0).to(tl.float64)
        tl.store(sample_ptr + i // sample_step, x, mask=valid & (i % sample_step == 0))
        finite = valid & (x - x == 0)
        y = tl.where(finite, x - shift, 0.0)
        count += finite.to(tl.float64)
        lo = tl.minimum(lo, tl.where(finite, x, float("inf")))
        hi = tl.maximum(hi, tl.where(finite, x, float("-inf")))
        total += y
        total_sq += y * y
        squares += tl.where(finite, x * x, 0.0)
        is_nan = valid & (x != x)
        nan += is_nan.to(tl.float64)
        posinf += (valid & (x == float("inf"))).to(tl.float64)
        neginf += (valid & (x == float("-inf"))).to(tl.float64)
    row = out_ptr + pid * 10
    tl.store(row + 0, tl.sum(count, 0))
    tl.store(row + 1, tl.min(lo, 0))
    tl.store(row + 2, tl.max(hi, 0))
    tl.store(row + 3, tl.sum(total, 0))
    tl.store(row + 4, tl.sum(total_sq, 0))
    tl.store(row + 5, tl.sum(squares, 0))
    tl.store(row + 6, tl.sum(nan, 0))
    tl.store(row + 7, tl.sum(posinf, 0))
    tl.store(row + 8, tl.sum(neginf, 0))
    tl.store(row + 9, shift)
