"""The other run of `hooktui view A.jsonl --against B.jsonl`, as the panes need it.

engine/analysis/compare.py aligns the runs; this looks the result up by A's firing number: the
twin tensors in B (made visible: B is a trace file too) and how each compares. No Textual.
When the two files' headers carry ranks, the status line names them ("rank 0 vs rank 1").
"""

from __future__ import annotations

from ..engine.analysis.compare import Comparison, TensorDiff
from ..engine.records.records import Event, TensorRecord
from ..visible import visible, visible_event

FIRST = "≠1st"
DIFFERS = "≠"


class Against:
    def __init__(self, label: str, comparison: Comparison, ranks: tuple[int | None, int | None] = (None, None)) -> None:
        self.label = label
        self.comparison = comparison
        self.ranks = ranks  # A's and B's, from their headers (None: not recorded)
        self._by_index = {comparison.a[f.a].key: f for f in comparison.firings if f.a is not None}
        # Marks by A's position: every firing that differs, and the first divergence.
        self.marks: dict[int, str] = {f.a: DIFFERS for f in comparison.firings if f.a is not None and f.differs}
        self.first: int | None = None  # A's position of the first divergence
        for i, firing in enumerate(comparison.firings):
            if firing.differs:
                # A firing only B has: A parts from B at its next own firing (or its last).
                later = [f.a for f in comparison.firings[i:] if f.a is not None]
                self.first = later[0] if later else len(comparison.a) - 1
                break
        if self.first is not None and self.first >= 0:
            self.marks[self.first] = FIRST

    @property
    def ranks_text(self) -> str:
        """ "rank 0 vs rank 1" (a run without a rank is A or B); "" when neither has one."""
        a, b = self.ranks
        if a is None and b is None:
            return ""
        return f"{'A' if a is None else f'rank {a}'} vs {'B' if b is None else f'rank {b}'}"

    def summary(self) -> str:
        result = self.comparison
        label = self.label if self.ranks[1] is None else f"{self.label} (rank {self.ranks[1]})"
        if result.agree:
            return f"against {label}: the runs agree ({result.aligned} firings aligned)"
        first = result.a[self.first].number if self.first is not None and self.first >= 0 else None
        where = f", first at #{first} (marked {FIRST})" if first is not None else ""
        return f"against {label}: {result.differing} of {len(result.firings)} firings differ{where}"

    def tensors(self, event: Event) -> dict[str, tuple[TensorRecord | None, TensorDiff]] | None:
        """Tensor name -> (B's tensor, how it compares), for A's firing `event`; None when
        B has no such firing."""
        firing = self._by_index.get(event.key)
        if firing is None or firing.b is None:
            return None
        twin = visible_event(self.comparison.b[firing.b])
        by_name = {t.name: t for t in twin.tensors}
        # The comparison holds the records' own names; the panes show them made visible.
        return {visible(d.name): (by_name.get(visible(d.name)), d) for d in firing.tensors}
