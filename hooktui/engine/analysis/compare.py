"""Two runs side by side: align their firings and say where their tensors part.

Pure records in, plain results out (no torch, no Textual): `hooktui diff` prints them,
`hooktui view A --against B` shows them beside each tensor.

Alignment. A firing is known by (phase, hook, module, call) and, for kinds that fire more
than once per call (a parameter's `param_grad`, the model's own hooks), by its place among
those: the k-th `param_grad` of `fc1` call 0 in A meets the k-th in B. Firing numbers may
differ between the runs (one recorded legacy firings, one failed early); a firing found in
one run only is a difference.

Values. Kept values are compared where both runs kept the same block; elsewhere (a trace
saved with `trace --values 0`, or another `--values`) a tensor is compared by its
statistics only, and the report says for how many tensors that was so.

Tolerance. Every number compared — a statistic, or a kept value where both runs kept the
same block — differs when |a - b| > atol + rtol * scale. For a statistic of size (abs-max,
norm, std) the scale is the larger |value| of the two; for one of position (min, max,
mean) and for kept values it is the tensor's larger abs-max, so that a mean of 1e-9 vs
3e-9 in a tensor of magnitude 1 is a rounding error, not a 200% change. The relative
difference reported is |a - b| / scale. NaN and Inf counts must match exactly; a NaN
facing a NaN in the values is equal. Different dtypes (float32 vs bfloat16) are compared
by value and reported, never a difference by themselves; different shapes are.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..records.records import Event, TensorRecord, TraceInfo

DEFAULT_RTOL = 1e-5
DEFAULT_ATOL = 1e-8

# A firing's alignment key: (phase, hook, module, call, place among the same).
Key = tuple[str, str, str, int, int]

# Statistics compared, and whether each is a size (scaled by itself) or a position
# (scaled by the tensor's magnitude).
STATS = (("min", "position"), ("max", "position"), ("mean", "position"), ("std", "size"), ("absmax", "size"), ("norm", "size"))


@dataclass(frozen=True)
class Tolerance:
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL

    def differs(self, error: float, scale: float) -> bool:
        return error > self.atol + self.rtol * scale


@dataclass
class TensorDiff:
    """One tensor of an aligned firing. `rel` is the largest relative difference found
    (None: nothing numeric to compare); `what` names the number it was found in, with
    its values `a` and `b`."""

    name: str
    differs: bool = False
    rel: float | None = None
    what: str = ""
    a: float | None = None
    b: float | None = None
    reason: str = ""  # why it differs, when not a number (shape, NaN count, missing)
    dtypes: tuple[str | None, str | None] | None = None  # when they differ
    values_compared: bool = False  # both runs kept the same block of values, compared element by element


@dataclass
class FiringDiff:
    """A firing of A and its twin in B (positions in each run's list of firings; None
    when the firing is in one run only)."""

    key: Key
    a: int | None
    b: int | None
    tensors: list[TensorDiff] = field(default_factory=list)

    @property
    def differs(self) -> bool:
        return self.a is None or self.b is None or any(t.differs for t in self.tensors)

    @property
    def rel(self) -> float | None:
        known = [t.rel for t in self.tensors if t.rel is not None]
        return max(known) if known else None

    @property
    def worst(self) -> TensorDiff | None:
        """The tensor that differs most (a differing one before any that agrees)."""
        if not self.tensors:
            return None
        return max(self.tensors, key=lambda t: (t.differs, -1.0 if t.rel is None else t.rel))


@dataclass
class ModuleDiff:
    module: str
    module_type: str
    rel: float
    firing: FiringDiff
    tensor: TensorDiff


@dataclass
class Comparison:
    a: Sequence[Event]
    b: Sequence[Event]
    tolerance: Tolerance
    firings: list[FiringDiff]

    @property
    def agree(self) -> bool:
        return not any(f.differs for f in self.firings)

    @property
    def first_difference(self) -> FiringDiff | None:
        return next((f for f in self.firings if f.differs), None)

    @property
    def differing(self) -> int:
        return sum(1 for f in self.firings if f.differs)

    @property
    def aligned(self) -> int:
        return sum(1 for f in self.firings if f.a is not None and f.b is not None)

    def values_coverage(self) -> tuple[int, int]:
        """(tensors whose kept values were compared, tensors compared by their numbers at
        all): a trace saved with `trace --values 0` keeps none, one with a smaller
        `--values` a different block, and those tensors are compared by statistics only."""
        numeric = [t for f in self.firings if f.a is not None and f.b is not None for t in f.tensors if t.rel is not None]
        return sum(1 for t in numeric if t.values_compared), len(numeric)

    def only_in(self, side: str) -> int:
        other = "b" if side == "a" else "a"
        return sum(1 for f in self.firings if getattr(f, other) is None)

    def by_position(self) -> dict[int, FiringDiff]:
        """A's positions -> their firing's comparison (what the app looks up)."""
        return {f.a: f for f in self.firings if f.a is not None}

    def modules(self) -> list[ModuleDiff]:
        """Per module, in the order modules first fire: the largest relative difference
        over its aligned firings, among the numbers beyond the tolerance if any is."""
        out: dict[str, ModuleDiff] = {}
        for firing in self.firings:
            if firing.a is None or firing.b is None:
                continue
            event = self.a[firing.a]
            for tensor in firing.tensors:
                if tensor.rel is None:
                    continue
                best = out.get(event.module)
                if best is None or (tensor.differs, tensor.rel) > (best.tensor.differs, best.rel):
                    out[event.module] = ModuleDiff(event.module, event.module_type, tensor.rel, firing, tensor)
        return list(out.values())


def models_differ(a: TraceInfo, b: TraceInfo) -> str:
    """Why two traces look like runs of different models, or "": fewer than half of the
    larger model's modules (name and type) are in the other. Firings align by module name
    and call, so two unrelated models align where their names happen to agree (`fc1`,
    the root) and the rest is "only in A": a comparison that means nothing."""
    mods_a = Counter((m.name, m.type) for m in a.modules)
    mods_b = Counter((m.name, m.type) for m in b.modules)
    larger = max(sum(mods_a.values()), sum(mods_b.values()))
    shared = sum((mods_a & mods_b).values())
    if larger == 0 or 2 * shared >= larger:
        return ""
    return f"only {shared} of {larger} modules (name and type) are in both: they look like different models"


def keys(events: Sequence[Event]) -> list[Key]:
    """Each firing's alignment key: (phase, hook, module, call, place among the same)."""
    seen: Counter = Counter()
    out = []
    for event in events:
        base = (event.phase, event.hook, event.module, event.call)
        out.append((*base, seen[base]))
        seen[base] += 1
    return out


def compare(a: Sequence[Event], b: Sequence[Event], tolerance: Tolerance = Tolerance()) -> Comparison:
    """Align the firings of runs `a` and `b` and compare every tensor of every pair."""
    keys_a, keys_b = keys(a), keys(b)
    where_b = {key: position for position, key in enumerate(keys_b)}
    paired_b = {where_b[key] for key in keys_a if key in where_b}
    firings: list[FiringDiff] = []
    next_b = 0  # B's firings before this position that only B has are placed here

    def flush_b(upto: int) -> None:
        nonlocal next_b
        while next_b < upto:
            if next_b not in paired_b:
                firings.append(FiringDiff(keys_b[next_b], None, next_b))
            next_b += 1

    for position, key in enumerate(keys_a):
        twin = where_b.get(key)
        if twin is None:
            firings.append(FiringDiff(key, position, None))
            continue
        flush_b(twin)
        next_b = max(next_b, twin + 1)
        firings.append(FiringDiff(key, position, twin, compare_tensors(a[position].tensors, b[twin].tensors, tolerance)))
    flush_b(len(keys_b))
    return Comparison(a, b, tolerance, firings)


def compare_tensors(a: Sequence[TensorRecord], b: Sequence[TensorRecord], tolerance: Tolerance) -> list[TensorDiff]:
    by_name_b = {t.name: t for t in b}
    names_a = {t.name for t in a}
    out = []
    for tensor in a:
        other = by_name_b.get(tensor.name)
        if other is None:
            out.append(TensorDiff(tensor.name, differs=True, reason="only in A"))
        else:
            out.append(compare_tensor(tensor, other, tolerance))
    out += [TensorDiff(t.name, differs=True, reason="only in B") for t in b if t.name not in names_a]
    return out


# One number compared: (relative difference, what, a, b, differs).
Finding = tuple[float, str, float | None, float | None, bool]


def compare_tensor(a: TensorRecord, b: TensorRecord, tolerance: Tolerance) -> TensorDiff:
    diff = TensorDiff(a.name)
    if a.dtype != b.dtype:
        diff.dtypes = (a.dtype, b.dtype)
    if a.is_missing or b.is_missing:
        if a.is_missing != b.is_missing:
            diff.differs, diff.reason = True, f"None in {'A' if a.is_missing else 'B'}"
        return diff
    if a.shape != b.shape:
        diff.differs, diff.reason = True, f"shape {tuple(a.shape)} vs {tuple(b.shape)}"
        return diff
    counts_a, counts_b = a.nonfinite_counts, b.nonfinite_counts
    if counts_a is not None and counts_b is not None and counts_a != counts_b:
        label, x, y = next(c for c in zip(("NaN", "+Inf", "-Inf"), counts_a, counts_b, strict=True) if c[1] != c[2])
        diff.differs, diff.reason = True, f"{label} count {x} vs {y}"
    findings: list[Finding] = []
    sa, sb = a.stats, b.stats
    magnitude = 0.0
    if sa is not None and sb is not None:
        magnitude = max(abs(sa.absmax or 0.0), abs(sb.absmax or 0.0))
        for name, kind in STATS:
            x, y = getattr(sa, name), getattr(sb, name)
            if x is None and y is None:
                continue
            if x is None or y is None:
                findings.append((math.inf, name, x, y, True))
                continue
            findings.append(_number(x, y, max(abs(x), abs(y)) if kind == "size" else magnitude, name, tolerance))
    # Sparse values compare row for row only where the same rows are stored (records.LayoutRecord).
    if a.values is not None and b.values is not None and a.values_shape == b.values_shape and a.layout == b.layout:
        diff.values_compared = True
        found = _values(a.values, b.values, a.values_shape, magnitude, tolerance)
        if found is not None:
            findings.append(found)
    if findings:
        # The number that differs most; when none differs, the closest call.
        differing = [f for f in findings if f[4]]
        rel, what, x, y, differs = max(differing or findings, key=lambda f: f[0])
        diff.rel, diff.what, diff.a, diff.b = rel, what, x, y
        diff.differs = diff.differs or differs
    return diff


def _number(x: float, y: float, scale: float, what: str, tolerance: Tolerance) -> Finding:
    if not (math.isfinite(x) and math.isfinite(y)):
        same = (math.isnan(x) and math.isnan(y)) or x == y
        return (0.0 if same else math.inf, what, x, y, not same)
    error = abs(x - y)
    rel = error / scale if scale > 0 else (0.0 if error == 0 else math.inf)
    return (rel, what, x, y, tolerance.differs(error, scale))


def _values(a: list[float], b: list[float], shape: list[int], magnitude: float, tolerance: Tolerance) -> Finding | None:
    """The kept values, element by element; NaN facing NaN and Inf facing the same Inf agree."""
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.size == 0:
        return None
    nan_x, nan_y = np.isnan(x), np.isnan(y)
    finite = np.isfinite(x) & np.isfinite(y)
    mismatch = (nan_x != nan_y) | (~finite & ~(nan_x & nan_y) & (x != y))
    if mismatch.any():
        i = int(np.argmax(mismatch))
        return (math.inf, _element(i, shape), float(x[i]), float(y[i]), True)
    if not finite.any():
        return None
    if magnitude == 0.0:
        magnitude = float(max(np.abs(x[finite]).max(), np.abs(y[finite]).max()))
    error = np.zeros_like(x)
    error[finite] = np.abs(x[finite] - y[finite])
    i = int(np.argmax(error))
    worst = float(error[i])
    rel = worst / magnitude if magnitude > 0 else (0.0 if worst == 0 else math.inf)
    return (rel, _element(i, shape), float(x[i]), float(y[i]), tolerance.differs(worst, magnitude))


def _element(flat: int, shape: list[int]) -> str:
    """The kept block's element `flat` by its index in the tensor: values[0, 3, 1]."""
    index = np.unravel_index(flat, shape) if shape else ()
    return f"values[{', '.join(str(int(i)) for i in index)}]"
