"""Gradient flow: one row per module call, in forward order, from plain records.

The overview (ui/widgets/overview.py) draws these rows. A row only remembers where its
firings are in the list of firings (positions); the numbers it shows are read from those
records when the row is drawn (`call_numbers`), so building and growing the rows costs
nothing per firing but a dict lookup, and a record's lazy statistics are computed only
for the rows on screen. No torch, no Textual: the same rows serve a live run and a trace.

What a row shows, from which firing of the call:
- output: the `forward` firing's first output tensor: abs-max and std;
- grad_output: the `backward_pre` firing's grad_output slots: their joint L2 norm (a call
  returning a dict has none: the gradients of the dict's tensors instead);
- grad_input: the `backward` firing's grad_input slots: their joint L2 norm;
- params: the `param_grad` firings that name the call (AccumulateGrad writes a parameter's
  `.grad` once per backward, after the last call of a shared module): their joint L2 norm.
The NaN/Inf flags come from the exact counts (`TensorRecord.nonfinite_counts`) of those
same tensors.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..records.records import Event, TensorRecord, firing_heads

# Which firings of a call a row keeps, by hook kind.
_KINDS = ("forward_pre", "forward", "backward_pre", "backward")
_KEPT = frozenset((*_KINDS, "param_grad"))


@dataclass(slots=True)
class CallRow:
    """One module call: where its firings are (positions in the list of firings)."""

    module: str
    call: int
    forward_pre: int | None = None
    forward: int | None = None
    backward_pre: int | None = None
    backward: int | None = None
    param_grads: list[int] = field(default_factory=list)
    # Bumped whenever a firing is attached: what was drawn for an older version is stale.
    version: int = 0

    @property
    def first(self) -> int | None:
        """The call's first firing: where Enter in the overview goes."""
        return self.forward_pre if self.forward_pre is not None else self.forward

    @property
    def backward_first(self) -> int | None:
        """The call's first backward firing (gradients arriving), if it had one yet."""
        return self.backward_pre if self.backward_pre is not None else self.backward


class CallRows:
    """Rows for every module call seen so far; `extend` with the list of firings as it grows."""

    def __init__(self) -> None:
        self.rows: list[CallRow] = []
        self._by_call: dict[tuple[str, int], int] = {}
        self._scanned = 0

    def __len__(self) -> int:
        return len(self.rows)

    def extend(self, events: Sequence[Event]) -> set[int]:
        """Take in the firings of `events` not seen yet; returns the rows that changed.
        Reads each firing's hook kind, phase, module and call only: a packed history
        gives them without unpacking a firing (records.firing_heads)."""
        changed: set[int] = set()
        rows, by_call, kept = self.rows, self._by_call, _KEPT
        position = self._scanned - 1
        for hook, phase, module, call in firing_heads(events, self._scanned):
            position += 1
            if hook not in kept:
                continue
            key = (module, call)
            row_no = by_call.get(key)
            if row_no is None:
                if phase != "forward":
                    continue  # a backward firing of a call never seen in forward: no row
                row_no = by_call[key] = len(rows)
                rows.append(CallRow(module, call))
            row = rows[row_no]
            if hook == "param_grad":
                row.param_grads.append(position)
            elif getattr(row, hook) is None:  # the first one (checkpointing re-runs forward)
                setattr(row, hook, position)
            else:
                continue
            row.version += 1
            changed.add(row_no)
        self._scanned = position + 1
        return changed

    def row_of(self, event: Event | None) -> int | None:
        """The row of the call `event` belongs to."""
        if event is None:
            return None
        return self._by_call.get((event.module, event.call))


@dataclass(slots=True)
class Quantity:
    """One number of a row and whether the tensors behind it hold NaN or Inf."""

    value: float | None = None
    nan: bool = False
    inf: bool = False

    @property
    def flag(self) -> str:
        return "NaN" if self.nan else "Inf" if self.inf else ""


@dataclass(slots=True)
class CallNumbers:
    output_absmax: Quantity
    output_std: Quantity
    grad_output: Quantity
    grad_input: Quantity
    params: Quantity

    @property
    def flag(self) -> str:
        """"NaN", "Inf" or "": the worst over every tensor of the row."""
        quantities = (self.output_absmax, self.grad_output, self.grad_input, self.params)
        if any(q.nan for q in quantities):
            return "NaN"
        return "Inf" if any(q.inf for q in quantities) else ""


def _present(tensors: Sequence[TensorRecord], prefix: str) -> list[TensorRecord]:
    return [t for t in tensors if not t.is_missing and not t.extra and t.name.startswith(prefix)]


def _arriving(tensors: Sequence[TensorRecord]) -> list[TensorRecord]:
    """The gradient arriving at a call's output: its grad_output slots; for a call with
    none (a dict returned: PyTorch's hooks see no output), hooktui's own gradients of the
    output's tensors (`grad of output['logits']`), not None."""
    return _present(tensors, "grad_output") or [t for t in tensors if t.extra and not t.is_missing and t.name.startswith("grad of output")]


def _flags(quantity: Quantity, tensors: Sequence[TensorRecord]) -> Quantity:
    for tensor in tensors:
        counts = tensor.nonfinite_counts
        if counts is not None:
            nan, posinf, neginf = counts
            quantity.nan = quantity.nan or nan > 0
            quantity.inf = quantity.inf or posinf + neginf > 0
    return quantity


def joint_norm(tensors: Sequence[TensorRecord]) -> Quantity:
    """The L2 norm of these tensors taken as one (over their finite values); None when
    none has statistics."""
    total, known = 0.0, False
    for tensor in tensors:
        stats = tensor.stats
        if stats is not None and stats.norm is not None:
            total += stats.norm * stats.norm
            known = True
    return _flags(Quantity(math.sqrt(total) if known else None), tensors)


def call_numbers(row: CallRow, events: Sequence[Event]) -> CallNumbers:
    """The numbers a row shows, read from its firings' records (computes their lazy
    statistics: call it for the rows on screen only)."""
    absmax, std = Quantity(), Quantity()
    if row.forward is not None:
        outputs = _present(events[row.forward].tensors, "output")
        if outputs:
            stats = outputs[0].stats
            if stats is not None:
                absmax.value, std.value = stats.absmax, stats.std
            _flags(absmax, outputs[:1])
            std.nan, std.inf = absmax.nan, absmax.inf
    grad_output = joint_norm(_arriving(events[row.backward_pre].tensors)) if row.backward_pre is not None else Quantity()
    grad_input = joint_norm(_present(events[row.backward].tensors, "grad_input")) if row.backward is not None else Quantity()
    params = Quantity()
    if row.param_grads:
        params = joint_norm([t for p in row.param_grads for t in events[p].tensors if not t.is_missing])
    return CallNumbers(absmax, std, grad_output, grad_input, params)
