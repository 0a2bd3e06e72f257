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
  how far hooktui is from Textual's own cost of drawing that much);
- memory/record_kb, memory/app_kb, memory/app_kb_less_grads, memory/app_held_kb_less_grads:
  KB of memory a held firing costs (growth of the process's resident memory over the run,
  divided by its firings) on the MLP repeated to ~36,000 firings (`--firings`), each in a
  process of its own: `record()` (memory.py --held-only: collected and trimmed before each
  reading), and the app on a pseudo-terminal after `c` (app_memory.py): its RSS as it is (the
  run's high-water marks included), with and without the run's final `.grad` the app keeps
  for the console (a parameter's worth, not a firing's), and held as record()'s is measured
  (collected and trimmed), without that .grad: the figure to set beside memory/record_kb.
  Goal: at most 2 KB. About two minutes; `--no-memory` leaves them out.

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
import re
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
# One line a case: "case  <value><unit>  last <value><unit>  <change>  [WORSE]" (unit "x" for a
# ratio, "KB" for memory); parsed by tests/test_bench_check.py.
LINE = "{case:30} {ratio:>7.2f}{unit:<3} last {last:>8}   {change:>7}  {flag}"
# A held firing's memory, as the two scripts print it (KB a firing).
MEMORY_LINES = {
    "memory/record_kb": ("memory.py", re.compile(r"held after the run .*?\((\d+\.\d+) KB/firing")),
    "memory/app_kb": ("app_memory.py", re.compile(r"RSS as it is .*?after the run .*?\((-?\d+\.\d+) KB/firing")),
    "memory/app_kb_less_grads": ("app_memory.py", re.compile(r"without them: .*RSS as it is (-?\d+\.\d+) KB/firing")),
    "memory/app_held_kb_less_grads": ("app_memory.py", re.compile(r"without them: held (-?\d+\.\d+) KB/firing")),
}


def unit(case: str) -> str:
    return "KB" if case.startswith("memory/") else "x"


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


def memory_kb(firings: int) -> dict[str, float]:
    """Each script in a process of its own (RSS is a process's); KB a held firing."""
    outputs = {}
    for script, extra in (("memory.py", ["--held-only"]), ("app_memory.py", [])):
        done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), "--firings", str(firings), *extra],
                              cwd=ROOT, capture_output=True, text=True, timeout=1800)
        if done.returncode:
            raise SystemExit(f"benchmarks/{script} failed:\n{done.stdout}{done.stderr}")
        outputs[script] = done.stdout
        print("  (" + "; ".join(line.strip() for line in done.stdout.splitlines()[:3]) + ")")
    found = {}
    for case, (script, pattern) in MEMORY_LINES.items():
        match = pattern.search(outputs[script])
        if match is None:
            raise SystemExit(f"benchmarks/{script} printed no {case} figure:\n{outputs[script]}")
        found[case] = float(match[1])
    return found


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
    if not args.no_memory:
        ratios.update(memory_kb(700 if args.smoke else args.firings))
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
    parser.add_argument("--no-memory", action="store_true", help="leave out the memory cases")
    parser.add_argument("--firings", type=int, default=30_000, help="the memory cases' run size (rounded to whole blocks)")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one repeat; nothing compared or recorded")
    args = parser.parse_args()
    if args.smoke:
        args.repeat = 1
    if args.record and (args.no_ui or args.no_memory):
        parser.error("--record keeps every case: run it without --no-ui and --no-memory")
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
            print(LINE.format(case=case, ratio=ratio, unit=unit(case), last="-", change="", flag="").rstrip())
            continue
        change = ratio / before - 1
        flag = "WORSE" if change > args.margin else ""
        worse += bool(flag)
        print(LINE.format(case=case, ratio=ratio, unit=unit(case), last=f"{before:.2f}{unit(case)}",
                          change=f"{change:+.0%}", flag=flag).rstrip())
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
