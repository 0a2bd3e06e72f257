"""`hooktui diff A.jsonl B.jsonl`: where do two runs part?

Both files are read as untrusted trace files (engine/records/trace_file.py); the alignment and the
comparison are engine/analysis/compare.py's. Prints the first firing whose tensors differ beyond the
tolerance and, per module, the largest relative difference; `--json` prints one JSON
object instead. Each side is labelled with its rank when its header has one. Three files
or more (one per rank) are diff_ranks.py's: which rank parted from the others first.
The words both reports use (labels, the tensors that differ, exit status) are diff_text.py's.
Exit status: 0 when the runs agree, 1 when they differ, 2 on bad input (or a standard
output that is closed or cannot be written). Every string from
a record is shown through hooktui/visible.py.
"""

from __future__ import annotations

import json
import math

from ..errors import UserError
from ..engine.analysis.compare import Comparison, FiringDiff, Tolerance, compare, models_differ
from ..engine.records.records import TraceInfo
from ..engine.records.trace_file import LoadedTrace, TraceFileError, read_trace_file
from ..visible import visible
from .diff_text import EXIT_AGREE, EXIT_DIFFER, firing_label, write_out, json_number, rel_text, side_json, side_label, tensor_lines, tensors_json
from .options import DiffOptions, Tolerances
from .standard_streams import stdout_closed


def read(path: str) -> LoadedTrace:
    try:
        return read_trace_file(path)
    except TraceFileError as exc:
        raise UserError(str(exc)) from exc


def tolerance(given: Tolerances) -> Tolerance:
    values = {}
    defaults = Tolerance()
    for name, value, default in (("rtol", given.rtol, defaults.rtol), ("atol", given.atol, defaults.atol)):
        value = default if value is None else value
        if not (math.isfinite(value) and value >= 0):
            raise UserError(f"--{name} {value}: a tolerance is a finite number of at least 0")
        values[name] = value
    return Tolerance(**values)


def run_diff(options: DiffOptions) -> int:
    paths = list(options.paths)
    if len(paths) < 2:
        raise UserError("diff needs two trace files or more (one per rank): hooktui diff A.jsonl B.jsonl [C.jsonl ...]")
    tol = tolerance(options.tolerances)
    if stdout_closed():
        raise UserError("cannot write to standard output: it is closed (the exit status alone: >/dev/null)")
    traces = [read(path) for path in paths]
    if len(paths) > 2:
        from .diff_ranks import run_ranks

        return run_ranks(paths, traces, tol, options.json)
    a, b = traces
    result = compare(a.events, b.events, tol)
    sides = [(paths[0], a.info), (paths[1], b.info)]
    write_out(json.dumps(as_json(result, *sides)) if options.json else report(result, *sides))
    return EXIT_AGREE if result.agree else EXIT_DIFFER


def parting(info_a: TraceInfo, info_b: TraceInfo) -> str:
    """ ", where rank 0 and rank 1 part" when both ranks are known (and not the same)."""
    if info_a.rank is None or info_b.rank is None or info_a.rank == info_b.rank:
        return ""
    return f", where rank {info_a.rank} and rank {info_b.rank} part"


# -- text ---------------------------------------------------------------------------------
def firing_report(result: Comparison, firing: FiringDiff) -> list[str]:
    """What differs in one firing, a line per tensor that differs."""
    if firing.b is None:
        return [f"{firing_label(result.a, firing.a)}: only in A (B has no such firing)"]
    if firing.a is None:
        return [f"{firing_label(result.b, firing.b)}: only in B (A has no such firing)"]
    head = firing_label(result.a, firing.a)
    if result.b[firing.b].key != result.a[firing.a].key:
        head += f" (B #{result.b[firing.b].number})"
    return [head, *tensor_lines(firing)]


def report(result: Comparison, side_a: tuple[str, TraceInfo], side_b: tuple[str, TraceInfo]) -> str:
    tol = result.tolerance
    lines = [
        f"A: {side_label(side_a[0], side_a[1], len(result.a))}",
        f"B: {side_label(side_b[0], side_b[1], len(result.b))}",
        f"{result.aligned} firings aligned by phase, hook, module and call; "
        f"{result.only_in('a')} only in A, {result.only_in('b')} only in B",
        f"a number differs when |a - b| > atol + rtol * scale (rtol {tol.rtol:g}, atol {tol.atol:g})",
    ]
    different = models_differ(side_a[1], side_b[1])
    if different:
        lines.insert(2, f"warning: {different}; a diff is of two runs of one model")
    with_values, numeric = result.values_coverage()
    if with_values < numeric:
        lines.append(f"kept values compared for {with_values} of {numeric} tensors; the other {numeric - with_values} by their "
                     "statistics only (a run kept no values for them, or a different block: trace --values)")
    lines.append("")
    first = result.first_difference
    if first is None:
        lines.append("the runs agree: every tensor of every firing within the tolerance")
    else:
        lines.append(f"first difference{parting(side_a[1], side_b[1])} ({result.differing} of {len(result.firings)} firings differ):")
        lines += ["  " + line for line in firing_report(result, first)]
    modules = result.modules()
    if modules:
        lines += ["", "largest relative difference per module:"]
        width = max(len(visible(m.module) or "(root)") for m in modules)
        type_width = max(len(visible(m.module_type)) for m in modules)
        for m in modules:
            event = result.a[m.firing.a]
            mark = "≠" if m.tensor.differs else " "
            where = f"#{event.number} {event.hook} {visible(m.tensor.name)} {m.tensor.what}" if m.rel else "identical"
            lines.append(f"  {mark} {(visible(m.module) or '(root)'):{width}}  {visible(m.module_type):{type_width}}  {rel_text(m.rel):>8}  {where}")
    return "\n".join(lines)


# -- JSON ---------------------------------------------------------------------------------
def firing_json(result: Comparison, firing: FiringDiff) -> dict:
    phase, hook, module, call, _ = firing.key
    out = {
        "index_a": None if firing.a is None else result.a[firing.a].index,
        "index_b": None if firing.b is None else result.b[firing.b].index,
        "phase": phase,
        "hook": hook,
        "module": module,
        "call": call,
        "rel": json_number(firing.rel),
        "tensors": tensors_json(firing),
    }
    if firing.a is None or firing.b is None:
        out["only_in"] = "A" if firing.b is None else "B"
    return out


def as_json(result: Comparison, side_a: tuple[str, TraceInfo], side_b: tuple[str, TraceInfo]) -> dict:
    first = result.first_difference
    with_values, numeric = result.values_coverage()
    return {
        "agree": result.agree,
        "rtol": result.tolerance.rtol,
        "atol": result.tolerance.atol,
        "a": side_json(*side_a, len(result.a)),
        "b": side_json(*side_b, len(result.b)),
        "aligned": result.aligned,
        "models_differ": models_differ(side_a[1], side_b[1]) or None,
        "only_in_a": result.only_in("a"),
        "only_in_b": result.only_in("b"),
        "differing_firings": result.differing,
        # Tensors compared by their numbers, and how many of them value by value too.
        "tensors_compared": numeric,
        "values_compared": with_values,
        "first_difference": None if first is None else firing_json(result, first),
        "modules": [
            {
                "module": m.module,
                "type": m.module_type,
                "rel": json_number(m.rel),
                "differs": m.tensor.differs,
                "index_a": result.a[m.firing.a].index,
                "hook": result.a[m.firing.a].hook,
                "tensor": m.tensor.name,
                "what": m.tensor.what,
            }
            for m in result.modules()
        ],
    }

