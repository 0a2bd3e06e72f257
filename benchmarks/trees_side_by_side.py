"""Two checkouts' hooktui.record, side by side, on the 64 x (Linear+GELU) model: the ratio
of their step times, taken pair by pair so that a shared machine's load moves both alike.

One worker process per checkout (its own .venv, its own engine), both warmed up; then, in
turn (the order alternating), each runs three record() steps and three bare steps and says
the fastest of each. The answer is the median over the pairs of (this step / that step):
load that changes between pairs drops out, where separate runs of check.py move by 10-20%.

    python benchmarks/trees_side_by_side.py /work/main /path/to/other [--pairs 30]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

# Run inside each checkout, by its own interpreter: stdin "go" -> "record_s bare_s".
WORKER = r"""
import sys, time, torch
sys.path.insert(0, "benchmarks")
torch.set_num_threads(1)
from models import mlp_case
from run import bare_step
from hooktui.engine.run.session import record
_label, model, inputs, loss_fn = mlp_case()
for _ in range(3):
    record(model, inputs, loss_fn)
    bare_step(model, inputs, loss_fn)
print("ready", flush=True)
for _line in sys.stdin:
    recs, bares = [], []
    for _ in range(3):
        t0 = time.perf_counter(); record(model, inputs, loss_fn); recs.append(time.perf_counter() - t0)
        t0 = time.perf_counter(); bare_step(model, inputs, loss_fn); bares.append(time.perf_counter() - t0)
    print(min(recs), min(bares), flush=True)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="a checkout with its .venv (e.g. main)")
    parser.add_argument("after", type=Path, help="another checkout with its .venv")
    parser.add_argument("--pairs", type=int, default=30)
    args = parser.parse_args()
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    workers = {}
    for key, tree in trees.items():
        python = tree / ".venv" / "bin" / "python"
        if not python.exists():
            sys.exit(f"no .venv in {tree} (run make install there)")
        workers[key] = subprocess.Popen([str(python), "-c", WORKER], cwd=tree, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
    try:
        for worker in workers.values():
            if worker.stdout.readline().strip() != "ready":
                sys.exit("a worker failed to start")
        times: dict[str, list[tuple[float, float]]] = {key: [] for key in trees}
        for i in range(args.pairs):
            for key in (("before", "after") if i % 2 == 0 else ("after", "before")):
                workers[key].stdin.write("go\n")
                workers[key].stdin.flush()
                rec, bare = map(float, workers[key].stdout.readline().split())
                times[key].append((rec, bare))
    finally:
        for worker in workers.values():
            worker.stdin.close()
            worker.wait()
    for key, tree in trees.items():
        pairs = times[key]
        rec = statistics.median(r for r, _ in pairs)
        bare = statistics.median(b for _, b in pairs)
        ratio = statistics.median(r / b for r, b in pairs)
        print(f"{key:6s} {tree}: record {rec * 1e3:.1f} ms, bare {bare * 1e3:.1f} ms, record / bare {ratio:.2f}x (medians)")
    after_vs_before = statistics.median(a[0] / b[0] for a, b in zip(times["after"], times["before"]))
    print(f"after / before, record step, median of {args.pairs} pairs: {after_vs_before:.3f}")


if __name__ == "__main__":
    main()
