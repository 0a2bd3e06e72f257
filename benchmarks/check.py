"""The short benchmark cases, each ratio printed beside the last recorded one.

    python benchmarks/check.py            # or: make bench-check
    python benchmarks/check.py --record   # and keep these ratios as the ones to compare with
    python benchmarks/check.py --no-ui    # the run-through cases only (~30 s on a quiet machine)

A benchmark, not a test: nothing fails. A ratio more than `--margin` (default 20%) above
the recorded one is flagged `WORSE`; on a shared machine, rerun before believing one
(ratios measured side by side still move by about +-15% under load). The recorded ratios
live in benchmarks/recorded.json, with the machine, the commit and the load they were
measured at: compare on the same machine.

Cases (each a ratio of two times measured side by side in one process, medians, one
torch thread):
- mlp/record_vs_plain: 64 x (Linear+GELU) at batch 32, hooktui.record against the plain
  `.item()` hooks floor (issue 33's goal: at most 1.2x);
- mlp/record_vs_bare, mlp/plain_vs_bare, resnet/record_vs_plain: as run.py prints them;
- ui/n_vs_bare, ui/N_vs_bare: key to screen in the app on the 1,000-module model against a
  bare Textual app whose key changes one line (ui_step.py; goal: at most 2x);
- ui/n_vs_same_change, ui/N_vs_same_change: the same keys against a bare Textual app whose
  key rewrites as many cells, on as many lines, as a step changes (ui_step.py's fair floor:
  how far hooktui is from Textual's own cost of drawing that much).

`--smoke`: tiny sizes and one repeat, not compared or recorded (a test runs it to check
the command works and its output parses).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from models import mlp_case, resnet_case  # noqa: E402
from run import bare_step, machine, plain_hooks_step  # noqa: E402

from hooktui.engine.run.session import record  # noqa: E402

RECORDED = ROOT / "benchmarks" / "recorded.json"
# One line a case: "case  <ratio>x  last <ratio>x  <change>  [WORSE]"; parsed by tests/test_bench_check.py.
LINE = "{case:24} {ratio:>7.2f}x   last {last:>8}   {change:>7}  {flag}"


def run_through(case, repeat: int) -> dict[str, float]:
    """Each ratio is the median over the repeats of that repeat's ratio (the three steps of a
    repeat run back to back, so a change of load between repeats cancels out)."""
    _label, model, inputs, loss_fn = case
    fns = [lambda: bare_step(model, inputs, loss_fn), lambda: plain_hooks_step(model, inputs, loss_fn),
           lambda: record(model, inputs, loss_fn)]
    for fn in fns:
        fn()  # warm up
    rounds = []
    for _ in range(repeat):
        times = []
        for fn in fns:
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        rounds.append(times)
    return {
        "record_vs_plain": statistics.median(t / p for _b, p, t in rounds),
        "record_vs_bare": statistics.median(t / b for b, _p, t in rounds),
        "plain_vs_bare": statistics.median(p / b for b, p, _t in rounds),
    }


def ui_ratios(steps: int) -> dict[str, float]:
    import ui_step

    ui_step.STEPS = steps
    bare = asyncio.run(ui_step.measure_bare())
    steps_times, _arrivals, _reached, backs, (cells, lines) = asyncio.run(ui_step.measure())
    same = asyncio.run(ui_step.measure_bare(ui_step.SameChangeApp(cells, lines)))
    floor, fair = statistics.median(bare), statistics.median(same)
    n, back = statistics.median(steps_times), statistics.median(backs)
    print(f"  (app keys, p50: bare Textual app {floor * 1e3:.1f} ms, one rewriting {cells} cells on {lines} lines "
          f"{fair * 1e3:.1f} ms, n {n * 1e3:.1f} ms, N {back * 1e3:.1f} ms)")
    return {"n_vs_bare": n / floor, "N_vs_bare": back / floor, "n_vs_same_change": n / fair, "N_vs_same_change": back / fair}


def measure(args) -> dict[str, float]:
    ratios: dict[str, float] = {}
    if args.smoke:
        cases = [("mlp", mlp_case(blocks=4, width=8, batch=2))]
    else:
        cases = [("mlp", mlp_case()), ("resnet", resnet_case())]
    for name, case in cases:
        for key, value in run_through(case, args.repeat).items():
            if name == "resnet" and key != "record_vs_plain":
                continue
            ratios[f"{name}/{key}"] = value
    if not args.no_ui and not args.smoke:
        for key, value in ui_ratios(args.ui_steps).items():
            ratios[f"ui/{key}"] = value
    return ratios


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", action="store_true", help="write these ratios to benchmarks/recorded.json")
    parser.add_argument("--margin", type=float, default=0.20, help="flag a ratio this much above the recorded one")
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--ui-steps", type=int, default=30)
    parser.add_argument("--no-ui", action="store_true", help="leave out the app's key-to-screen cases")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one repeat; nothing compared or recorded")
    args = parser.parse_args()
    if args.smoke:
        args.repeat = 1
    torch.set_num_threads(1)
    recorded = {} if args.smoke or not RECORDED.exists() else json.loads(RECORDED.read_text())
    last = recorded.get("ratios", {})
    print(f"machine: {machine()}")
    if recorded:
        print(f"recorded: {recorded.get('date')} at {recorded.get('commit')} on {recorded.get('machine')}")
    ratios = measure(args)
    worse = 0
    for case, ratio in ratios.items():
        before = last.get(case)
        if before is None:
            print(LINE.format(case=case, ratio=ratio, last="-", change="", flag="").rstrip())
            continue
        change = ratio / before - 1
        flag = "WORSE" if change > args.margin else ""
        worse += bool(flag)
        print(LINE.format(case=case, ratio=ratio, last=f"{before:.2f}x", change=f"{change:+.0%}", flag=flag).rstrip())
    print(f"{worse} case(s) worse by more than {args.margin:.0%}" + (" (rerun before believing it)" if worse else ""))
    if args.record and not args.smoke:
        RECORDED.write_text(json.dumps({
            "date": datetime.date.today().isoformat(), "commit": commit(), "machine": machine(),
            "python": platform.python_version(), "torch": torch.__version__, "cpus": os.cpu_count(),
            "ratios": {case: round(ratio, 3) for case, ratio in ratios.items()},
        }, indent=2) + "\n")
        print(f"recorded in {RECORDED.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
