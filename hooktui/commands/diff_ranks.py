"""`hooktui diff r0.jsonl r1.jsonl r2.jsonl ...`: which rank parted from the others first?

Three trace files or more, one per rank: engine/analysis/compare_ranks.py compares every pair at
every firing; this prints the first firing where they do not all agree, which runs parted
from the majority there (and the numbers, against one run of the majority), and for each
run the first firing where it is an outlier. `--json` prints the same facts as one object.
Runs are called by their rank, in rank order, when every header has a different one; else
A, B, C... in the order given.
Every string from a file is shown through hooktui/visible.py.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence

from ..engine.analysis.compare import Tolerance
from ..engine.analysis.compare_ranks import RankComparison, RankFiring, compare_runs
from ..engine.records.trace_file import LoadedTrace
from ..visible import visible
from .diff_text import EXIT_AGREE, EXIT_DIFFER, firing_label, write_out, side_json, side_label, tensor_lines, tensors_json

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def run_ranks(paths: Sequence[str], traces: Sequence[LoadedTrace], tolerance: Tolerance, as_json: bool) -> int:
    names = run_names(traces)
    if names[0].startswith("rank "):  # in rank order (a shell's glob sorts by pid)
        order = sorted(range(len(traces)), key=lambda i: traces[i].info.rank)
        paths, traces, names = [paths[i] for i in order], [traces[i] for i in order], [names[i] for i in order]
    result = compare_runs([t.events for t in traces], tolerance)
    write_out(json.dumps(ranks_json(result, paths, traces, names)) if as_json else ranks_report(result, paths, traces, names))
    return EXIT_AGREE if result.agree else EXIT_DIFFER


def run_names(traces: Sequence[LoadedTrace]) -> list[str]:
    """"rank 2" when every file's header has a rank and no two the same; else A, B, C..."""
    ranks = [t.info.rank for t in traces]
    if None not in ranks and len(set(ranks)) == len(ranks):
        return [f"rank {r}" for r in ranks]
    if len(traces) <= len(LETTERS):
        return list(LETTERS[: len(traces)])
    return [f"file {i + 1}" for i in range(len(traces))]


def name_list(runs: Sequence[int], names: Sequence[str]) -> str:
    """"rank 2", "ranks 0, 1", "ranks 0-5, 7" (runs of three or more ranks as a range), "A, C"."""
    chosen = [names[r] for r in runs]
    if not all(n.startswith("rank ") for n in chosen):
        return ", ".join(chosen)
    numbers = sorted(int(n.removeprefix("rank ")) for n in chosen)
    if len(numbers) == 1:
        return f"rank {numbers[0]}"
    parts: list[str] = []
    start = previous = numbers[0]
    for n in [*numbers[1:], None]:
        if n is not None and n == previous + 1:
            previous = n
            continue
        if previous - start >= 2:
            parts.append(f"{start}-{previous}")
        else:
            parts += [str(k) for k in range(start, previous + 1)]
        if n is not None:
            start = previous = n
    return "ranks " + ", ".join(parts)


def pair_of(firing: RankFiring) -> tuple[int, int]:
    """(a run that parted, a run it disagrees with) at `firing`: the first outlier against
    the first run of the majority it disagrees with; without a majority, the first pair of
    runs that disagree (the later against the earlier)."""
    for run in firing.outliers:
        other = next((m for m in firing.majority if firing.disagrees(run, m)), None)
        if other is not None:
            return run, other
    first, second = min(firing.differ)
    return second, first


def _number(result: RankComparison, firing: RankFiring, run: int) -> str:
    """The firing's number as `run` numbers it (or as the first run that has it)."""
    return result.event(firing, prefer=(run,))[1].number


# -- text ---------------------------------------------------------------------------------
def ranks_report(result: RankComparison, paths: Sequence[str], traces: Sequence[LoadedTrace], names: Sequence[str]) -> str:
    tol = result.tolerance
    width = max(len(n) for n in names)
    lines = [f"{len(paths)} runs compared, each against every other:"]
    lines += [f"  {name + ':':{width + 1}} {side_label(path, t.info, len(t.events))}" for name, path, t in zip(names, paths, traces, strict=True)]
    lines += [
        f"{result.aligned} firings aligned by phase, hook, module and call; {len(result.firings) - result.aligned} not in every run",
        f"a number differs when |a - b| > atol + rtol * scale (rtol {tol.rtol:g}, atol {tol.atol:g})",
        "",
    ]
    first = result.first_difference
    if first is None:
        lines.append("the runs agree: every tensor of every firing within the tolerance, in every run")
        return "\n".join(lines)
    run, other = pair_of(first)
    shown_run, _ = result.event(first, prefer=first.majority or (other,))
    label = firing_label(result.runs[shown_run], first.positions[shown_run])
    if first.outliers:
        who = name_list(first.outliers, names)
        lines.append(f"{who} diverged first, at:")
        lines.append(f"  {label}")
        majority = name_list(first.majority, names)
        if len(first.majority) == 1:
            agree = f"{majority} is the rest"
        elif first.all_agree(first.majority):
            agree = f"{majority} agree there"
        else:  # within the tolerance of most, not of each other (a tolerance is no equivalence)
            agree = f"{majority} are the majority there"
        lines.append(f"  {agree}; {names[run]} against {names[other]}:")
    else:
        lines.append("the runs part with no majority, at:")
        lines.append(f"  {label}")
        groups = first.groups()
        if all(len(g) == 1 for g in groups):
            lines.append("  no two runs agree there")
        else:
            lines.append("  " + "; ".join(f"{name_list(g, names)} agree" if len(g) > 1 else f"{name_list(g, names)} alone" for g in groups))
        lines.append(f"  {names[run]} against {names[other]}:")
    pair = result.pair(first, run, other)
    if pair.a is None or pair.b is None:
        missing, present = (names[run], names[other]) if pair.a is None else (names[other], names[run])
        lines.append(f"    {present} has this firing, {missing} has not")
    else:
        lines += ["  " + line for line in tensor_lines(pair, (names[run], names[other]))]
    lines += ["", f"when each run parts from the majority ({result.differing} of {len(result.firings)} firings differ):"]
    for i, name in enumerate(names):
        parted = result.parted(i)
        if parted:
            where = f"first at #{_number(result, parted[0], i)} ({len(parted)} firing{'s' if len(parted) > 1 else ''} in all)"
        else:
            where = "never"
        lines.append(f"  {name:{width}}  {where}")
    lines += ["", f"{names[run]} against {names[other]}, module by module:", f"  hooktui diff {shell(paths[other])} {shell(paths[run])}"]
    return "\n".join(lines)


def shell(path: str) -> str:
    """A path as it would be typed, control characters made visible."""
    return visible(shlex.quote(path))


# -- JSON ---------------------------------------------------------------------------------
def ranks_json(result: RankComparison, paths: Sequence[str], traces: Sequence[LoadedTrace], names: Sequence[str]) -> dict:
    runs = []
    for i, (name, path, trace) in enumerate(zip(names, paths, traces, strict=True)):
        parted = result.parted(i)
        first_index = None if not parted else result.event(parted[0], prefer=(i,))[1].index
        runs.append({"name": name, **side_json(path, trace.info, len(trace.events)), "parts_at": len(parted), "first_parts_at": first_index})
    first = result.first_difference
    return {
        "agree": result.agree,
        "rtol": result.tolerance.rtol,
        "atol": result.tolerance.atol,
        "runs": runs,
        "firings": len(result.firings),
        "aligned": result.aligned,
        "differing_firings": result.differing,
        "first_difference": None if first is None else first_json(result, first),
    }


def first_json(result: RankComparison, first: RankFiring) -> dict:
    """The first firing where the runs do not all agree; runs by their place in `runs`."""
    phase, hook, module, call, _ = first.key
    run, other = pair_of(first)
    pair = result.pair(first, run, other)
    return {
        "phase": phase,
        "hook": hook,
        "module": module,
        "call": call,
        "indices": [None if i not in first.positions else result.runs[i][first.positions[i]].index for i in range(len(result.runs))],
        "majority": bool(first.outliers),
        "diverged": first.outliers,
        "agree": first.majority,
        "groups": first.groups(),
        # One run that parted against one it parted from: `a` is the first's number, `b` the other's.
        "compared": {"run": run, "against": other, "only_in": None if pair.a is not None and pair.b is not None else ("a" if pair.b is None else "b"),
                     "tensors": tensors_json(pair)},
    }

