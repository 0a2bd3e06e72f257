"""A TensorStats as bytes: how a lazy summary keeps its statistics once computed
(engine/summaries/lazy_stats.py), and how a packed firing keeps them (held.py), so that
packing a settled summary copies its bytes instead of building the record and packing it
again. No torch: the bottom room's.
"""

from __future__ import annotations

import math
import struct

from .records import TensorStats

# The fixed fields (None as NaN: never a statistic of finite values), the histogram
# range, then the histogram's counts.
FIXED = struct.Struct("<19d")
_NONE = math.nan


def pack_stats(s: TensorStats) -> bytes:
    lo, hi = s.hist_range if s.hist_range is not None else (_NONE, _NONE)
    fixed = FIXED.pack(
        s.count, s.finite, *(_NONE if v is None else v for v in (s.min, s.max, s.mean, s.std, s.absmax, s.norm)),
        s.nan, s.posinf, s.neginf, s.zeros, s.nonfinite, s.approx, s.sampled, s.of == "abs", s.hist_sampled,
        lo, hi,
    )
    return fixed + struct.pack(f"<{len(s.hist)}I", *s.hist)  # at most 2^20 values are binned


def unpack_stats(packed: bytes) -> TensorStats:
    (count, finite, lo, hi, mean, std, absmax, norm, nan, posinf, neginf, zeros, nonfinite, approx, sampled, is_abs,
     hist_sampled, range_lo, range_hi) = FIXED.unpack_from(packed)
    hist = list(struct.unpack_from(f"<{(len(packed) - FIXED.size) // 4}I", packed, FIXED.size))
    none = _none
    return TensorStats(
        count=int(count), finite=int(finite), min=none(lo), max=none(hi), mean=none(mean), std=none(std),
        absmax=none(absmax), norm=none(norm), nan=int(nan), posinf=int(posinf), neginf=int(neginf), zeros=int(zeros),
        nonfinite=int(nonfinite), hist=hist, hist_range=None if range_lo != range_lo else [range_lo, range_hi],
        approx=bool(approx), sampled=int(sampled), of="abs" if is_abs else "values", hist_sampled=int(hist_sampled),
    )


def counts_of(packed: bytes) -> tuple[int, int, int]:
    """(NaN, +Inf, -Inf) of packed statistics, without unpacking the rest."""
    nan, posinf, neginf = FIXED.unpack_from(packed)[8:11]
    return int(nan), int(posinf), int(neginf)


def _none(value: float) -> float | None:
    return None if value != value else value
