"""Short text for records, shared by the CLI table and the UI (no Textual, no torch)."""

from __future__ import annotations

from .records import TensorRecord


def shape_text(tensor: TensorRecord) -> str:
    if tensor.shape is None:
        return "None"
    return "(" + ", ".join(str(n) for n in tensor.shape) + ("," if len(tensor.shape) == 1 else "") + ")"


def number(value: float | None) -> str:
    if value is None:
        return "-"
    if value == 0:
        return "0"
    if abs(value) >= 1e4 or abs(value) < 1e-3:
        return f"{value:.2e}"
    return f"{value:.4g}"


def stats_line(tensor: TensorRecord) -> str:
    """A lovely-tensors style one-liner: loud NaN/Inf/zero flags, then range, mean, std."""
    if tensor.shape is None:
        return f"None: {tensor.missing}" if tensor.missing else "None"
    stats = tensor.stats
    if stats is None:
        return tensor.note or "no stats"
    # A nested or sparse tensor: the stats are of its stored values, said after the loud flags.
    layout = [] if tensor.layout is None else [tensor.layout.short() + ":"]
    if stats.count == 0:
        return " ".join([*layout, "empty"])
    # Loud flags first: a narrow pane or a cut cell must never hide them.
    parts = []
    if stats.nan:
        parts.append(f"NaN! {stats.nan}")
    if stats.posinf:
        parts.append(f"+Inf! {stats.posinf}")
    if stats.neginf:
        parts.append(f"-Inf! {stats.neginf}")
    if stats.approx and stats.nonfinite and not (stats.nan or stats.posinf or stats.neginf):
        parts.append(f"non-finite! {stats.nonfinite}")
    parts += layout
    if stats.zeros == stats.count:
        parts.append("all zeros")
    if stats.finite:
        parts.append(f"x∈[{number(stats.min)}, {number(stats.max)}]")
        parts.append(f"μ={number(stats.mean)}")
        if stats.std is not None:
            parts.append(f"σ={number(stats.std)}")
    if stats.of == "abs":
        parts.append("(of |z|)")
    if stats.approx:
        parts.append(f"(~ from {stats.sampled} samples)")
    return " ".join(parts)
