"""The words both diff reports use (diff.py for two runs, diff_ranks.py for one per rank):
a run's label, a firing's label, the lines and JSON of the tensors that differ, and the exit
status. Every string from a record is shown through hooktui/visible.py.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

from ..engine.analysis.compare import FiringDiff
from ..engine.records.records import Event, TraceInfo
from ..errors import UserError
from ..visible import visible

EXIT_AGREE, EXIT_DIFFER = 0, 1


def write_out(text: str) -> None:
    """The report on stdout; one that cannot be written (a full disk) is refused in words,
    exit status 2 (1 means the runs differ)."""
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot write to standard output: {getattr(exc, 'strerror', None) or exc}") from exc


def side_label(path: str, info: TraceInfo, firings: int) -> str:
    """ "r0.jsonl (rank 0 of 2, 24 firings)": the file, and its rank when its header has one."""
    rank = info.rank_text()
    return f"{visible(path)} ({rank + ', ' if rank else ''}{firings} firings)"


def firing_label(events: Sequence[Event], position: int) -> str:
    event = events[position]
    module = visible(event.module) or "(root)"
    return f"#{event.number} {event.phase} {event.hook} {module} call {event.call} ({visible(event.module_type)})"


def value_text(value: float | None) -> str:
    return "None" if value is None else f"{value:.6g}"


def rel_text(rel: float | None) -> str:
    return "-" if rel is None else "inf" if math.isinf(rel) else f"{rel:.2e}"


def side_reason(reason: str, names: tuple[str, str]) -> str:
    """compare.py's "only in A", "None in B", with the runs' own names."""
    for letter, name in zip(("A", "B"), names, strict=True):
        if reason.endswith(f" in {letter}"):
            return reason[: -len(letter)] + name
    return reason


def tensor_lines(firing: FiringDiff, names: tuple[str, str] = ("A", "B")) -> list[str]:
    """A line per tensor of `firing` that differs: what, A's number vs B's, by how much."""
    lines = []
    for tensor in firing.tensors:
        if not tensor.differs:
            continue
        name = visible(tensor.name)
        if tensor.reason:
            line = f"  {name}: {side_reason(tensor.reason, names)}"
            if tensor.what:
                line += f"; {tensor.what} {value_text(tensor.a)} vs {value_text(tensor.b)}"
        else:
            line = f"  {name}: {tensor.what} {value_text(tensor.a)} vs {value_text(tensor.b)}, relative difference {rel_text(tensor.rel)}"
        if tensor.dtypes:
            line += f" ({visible(tensor.dtypes[0] or '?')} vs {visible(tensor.dtypes[1] or '?')})"
        lines.append(line)
    return lines


def json_number(value: float | None):
    """JSON has no NaN or Infinity: spelled "nan", "inf", "-inf" as in trace files."""
    return value if value is None or math.isfinite(value) else str(value)


def tensors_json(firing: FiringDiff) -> list[dict]:
    """The tensors of `firing` that differ: `a` and `b` are the two runs' numbers."""
    return [
        {"name": t.name, "differs": t.differs, "rel": json_number(t.rel), "what": t.what, "a": json_number(t.a), "b": json_number(t.b), "reason": t.reason}
        for t in firing.tensors
        if t.differs
    ]


def side_json(path: str, info: TraceInfo, firings: int) -> dict:
    return {"path": path, "rank": info.rank, "world_size": info.world_size, "firings": firings}
