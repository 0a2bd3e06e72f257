"""Several runs side by side (one per rank): which one parted from the others first?

Pure records in, plain results out, as compare.py, whose alignment and tolerance this
uses: firings are matched by (phase, hook, module, call, place among the same), and two
runs agree at a firing when each has it and every tensor is within the tolerance (or
neither has it). Every pair of runs is compared at every firing.

At each firing the runs are split by the majority: a run that disagrees with more than
half of the others has parted from them (an outlier); the others are the majority. When
no run is an outlier although some disagree (two against two), or when every run is (no
two agree), there is no majority there: the firing is a split. The report's answer to
"which rank diverged first" is the first firing where the runs do not all agree, with its
outliers (or its split), and for each run the first firing where it is an outlier.

The order of firings is the first run's, with each firing that only later runs have
placed before the next firing the runs share (as compare.py places B's own firings).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import combinations

from ..records.records import Event
from .compare import FiringDiff, Key, Tolerance, compare_tensors, keys


@dataclass
class RankFiring:
    """One firing across the runs: where each run has it (its position in that run's
    firings; a run without it is absent), and the pairs of runs that disagree there."""

    key: Key
    positions: dict[int, int]
    differ: frozenset[tuple[int, int]] = frozenset()
    runs: int = 0

    @property
    def agree(self) -> bool:
        return not self.differ

    def disagrees(self, i: int, j: int) -> bool:
        return (min(i, j), max(i, j)) in self.differ

    @cached_property
    def outliers(self) -> list[int]:
        """Runs that disagree with more than half of the others; empty where all agree or
        there is no majority (see `majority`)."""
        if not self.differ:
            return []
        counts = [sum(1 for j in range(self.runs) if j != i and self.disagrees(i, j)) for i in range(self.runs)]
        out = [i for i, n in enumerate(counts) if 2 * n > self.runs - 1]
        return out if len(out) < self.runs else []

    def all_agree(self, runs: Sequence[int]) -> bool:
        return not any(self.disagrees(i, j) for i, j in combinations(runs, 2))

    @property
    def majority(self) -> list[int]:
        """The runs the outliers parted from; empty where there is none."""
        outliers = self.outliers
        return [i for i in range(self.runs) if i not in outliers] if outliers else []

    def groups(self) -> list[list[int]]:
        """The runs in groups whose runs all agree with each other (each run joins the first
        group it agrees with throughout): how a split without a majority falls."""
        out: list[list[int]] = []
        for i in range(self.runs):
            group = next((g for g in out if not any(self.disagrees(j, i) for j in g)), None)
            if group is None:
                out.append([i])
            else:
                group.append(i)
        return out


@dataclass
class RankComparison:
    runs: Sequence[Sequence[Event]]
    tolerance: Tolerance
    firings: list[RankFiring] = field(default_factory=list)

    @property
    def agree(self) -> bool:
        return all(f.agree for f in self.firings)

    @property
    def first_difference(self) -> RankFiring | None:
        return next((f for f in self.firings if not f.agree), None)

    @property
    def differing(self) -> int:
        return sum(1 for f in self.firings if not f.agree)

    @property
    def aligned(self) -> int:
        """Firings every run has."""
        return sum(1 for f in self.firings if len(f.positions) == len(self.runs))

    def parted(self, run: int) -> list[RankFiring]:
        """The firings where `run` is an outlier, in order."""
        return [f for f in self.firings if run in f.outliers]

    def pair(self, firing: RankFiring, run: int, other: int) -> FiringDiff:
        """`run` against `other` at `firing`, tensor by tensor (a: run, b: other)."""
        a, b = firing.positions.get(run), firing.positions.get(other)
        if a is None or b is None:
            return FiringDiff(firing.key, a, b)
        return FiringDiff(firing.key, a, b, compare_tensors(self.runs[run][a].tensors, self.runs[other][b].tensors, self.tolerance))

    def event(self, firing: RankFiring, prefer: Sequence[int] = ()) -> tuple[int, Event]:
        """(run, its record) that shows `firing`: the first of `prefer` that has it, else the first run that does."""
        run = next((r for r in prefer if r in firing.positions), None)
        if run is None:
            run = min(firing.positions)
        return run, self.runs[run][firing.positions[run]]


DEFAULT_TOLERANCE = Tolerance()


def compare_runs(runs: Sequence[Sequence[Event]], tolerance: Tolerance = DEFAULT_TOLERANCE) -> RankComparison:
    """Align the firings of every run and compare each pair of runs at each firing."""
    all_keys = [keys(run) for run in runs]
    where = [{key: position for position, key in enumerate(run_keys)} for run_keys in all_keys]
    result = RankComparison(runs, tolerance)
    for key in merged_order(all_keys):
        positions = {run: found[key] for run, found in enumerate(where) if key in found}
        differ = set()
        for i, j in combinations(range(len(runs)), 2):
            a, b = positions.get(i), positions.get(j)
            if a is None and b is None:
                continue
            if a is None or b is None or any(t.differs for t in compare_tensors(runs[i][a].tensors, runs[j][b].tensors, tolerance)):
                differ.add((i, j))
        result.firings.append(RankFiring(key, positions, frozenset(differ), len(runs)))
    return result


def merged_order(all_keys: Sequence[Sequence[Key]]) -> list[Key]:
    """Every key once: the first run's order, each later run's own keys placed before the
    next key it shares with what came before (at the end when none follows)."""
    order = list(all_keys[0]) if all_keys else []
    for run_keys in all_keys[1:]:
        known = set(order)
        before: dict[Key | None, list[Key]] = {}
        pending: list[Key] = []
        for key in run_keys:
            if key in known:
                if pending:
                    before.setdefault(key, []).extend(pending)
                    pending = []
            else:
                pending.append(key)
                known.add(key)
        if pending:
            before[None] = pending
        if not before:
            continue
        merged: list[Key] = []
        for key in order:
            merged += before.get(key, ())
            merged.append(key)
        merged += before.get(None, ())
        order = merged
    return order
