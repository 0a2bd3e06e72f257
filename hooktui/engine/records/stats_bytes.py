"""A TensorStats as bytes, the one layout: how a lazy summary keeps its statistics once
computed (engine/summaries/lazy_stats.py), and how a packed firing keeps them (held.py),
so that packing a settled summary copies its bytes instead of building the record and
packing it again, and a packed record reads them as a lazy one does. No torch: the bottom
room's.

The layout: count and finite (int64), min, max, mean, std, absmax, norm (float64, None as
NaN: a statistic of finite values is never NaN), nan, posinf, neginf, zeros, nonfinite
(int64), approx (bool), sampled (int64), of == "abs" (bool), hist_sampled (int64), the
histogram's range (two float64, NaN for None), then the histogram's counts (uint32 each).
Integers stay integers (a count past 2^53 is exact), where float64 would round them.

What the engine makes always fits (`pack_stats`). A TensorStats from elsewhere (a trace
file's, as its JSON had it: an integer where a float is) may not: `exact_bytes` says None
then, and held.py keeps that record as it is.
"""

from __future__ import annotations

import struct
import sys
from array import array

from .records import TensorStats

FIXED = struct.Struct("<2q6d5q?q?q2d")
_NONE = float("nan")
# The histogram's counts, little-endian like the fixed part (an array's own order is the
# machine's: swapped where that is big-endian).
_HIST = "I" if array("I").itemsize == 4 else "L"
_SWAP = sys.byteorder == "big"
# Where (NaN, +Inf, -Inf) are: after the two counts and the six floats.
_COUNTS = struct.Struct("<3q")
_COUNTS_AT = struct.calcsize("<2q6d")


def pack_stats(s: TensorStats) -> bytes:
    """`s` in the layout (struct.error or OverflowError where it cannot hold `s`: use
    `exact_bytes` for a TensorStats not made by the engine)."""
    lo, hi = s.hist_range if s.hist_range is not None else (_NONE, _NONE)
    fixed = FIXED.pack(
        s.count, s.finite, *(_NONE if v is None else v for v in (s.min, s.max, s.mean, s.std, s.absmax, s.norm)),
        s.nan, s.posinf, s.neginf, s.zeros, s.nonfinite, s.approx, s.sampled, s.of == "abs", s.hist_sampled,
        lo, hi,
    )
    hist = array(_HIST, s.hist)  # at most 2^20 values are binned
    if _SWAP:
        hist.byteswap()
    return fixed + hist.tobytes()


def exact_bytes(s: TensorStats) -> bytes | None:
    """`s` in the layout when unpacking gives back a TensorStats equal to it, field by field
    and type by type; else None."""
    floats = (s.min, s.max, s.mean, s.std, s.absmax, s.norm)
    rng = s.hist_range
    if (s.of not in ("values", "abs") or type(s.approx) is not bool
            or not all(v is None or (type(v) is float and v == v) for v in floats)
            or not (rng is None or (type(rng) is list and len(rng) == 2 and all(type(v) is float and v == v for v in rng)))
            or not all(type(v) is int for v in (s.count, s.finite, s.nan, s.posinf, s.neginf, s.zeros, s.nonfinite,
                                                 s.sampled, s.hist_sampled))
            or type(s.hist) is not list or not set(map(type, s.hist)) <= _INT
            or (s.hist and not 0 <= min(s.hist) <= max(s.hist) < 1 << 32)):
        return None
    try:
        return pack_stats(s)
    except (struct.error, OverflowError):  # an integer past int64
        return None


_INT = frozenset((int,))


def unpack_stats(packed: bytes) -> TensorStats:
    (count, finite, lo, hi, mean, std, absmax, norm, nan, posinf, neginf, zeros, nonfinite, approx, sampled, is_abs,
     hist_sampled, range_lo, range_hi) = FIXED.unpack_from(packed)
    hist = array(_HIST)
    hist.frombytes(packed[FIXED.size:])
    if _SWAP:
        hist.byteswap()
    none = _none
    return TensorStats(
        count=count, finite=finite, min=none(lo), max=none(hi), mean=none(mean), std=none(std),
        absmax=none(absmax), norm=none(norm), nan=nan, posinf=posinf, neginf=neginf, zeros=zeros,
        nonfinite=nonfinite, hist=hist.tolist(), hist_range=None if range_lo != range_lo else [range_lo, range_hi],
        approx=approx, sampled=sampled, of="abs" if is_abs else "values", hist_sampled=hist_sampled,
    )


def counts_of(packed: bytes) -> tuple[int, int, int]:
    """(NaN, +Inf, -Inf) of packed statistics, without unpacking the rest."""
    return _COUNTS.unpack_from(packed, _COUNTS_AT)


def _none(value: float) -> float | None:
    return None if value != value else value
