"""hooktui.guard's cost against torch.autograd.detect_anomaly(), side by side in one run.

Per model, blocks of K training steps (forward, backward, gradients zeroed) alternate:
bare, under one `with hooktui.guard(model)` (and one with `find_node=False`), under one
`with torch.autograd.detect_anomaly()`, and one `hooktui.record` per step (the run-through, what the app's `c` costs). The medians
of the per-step times are reported as ratios to bare. Results: docs/benchmarks.md.

    .venv/bin/python benchmarks/guard.py [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from models import mlp_case, resnet_case  # noqa: E402
from run import machine  # noqa: E402

import hooktui  # noqa: E402
from hooktui.engine.run.inputs import default_loss, split_inputs  # noqa: E402
from hooktui.engine.run.loader import load_target  # noqa: E402


def step(model, inputs, loss_fn) -> None:
    args, kwargs = split_inputs(inputs)
    out = model(*args, **kwargs)
    (loss_fn(out) if loss_fn else default_loss(out)).backward()
    for p in model.parameters():
        p.grad = None


def timed_block(run_steps, k: int) -> list[float]:
    times = []
    for _ in range(k):
        start = time.perf_counter()
        run_steps()
        times.append(time.perf_counter() - start)
    return times


def measure(model, inputs, loss_fn, k: int, rounds: int) -> dict[str, float]:
    one = lambda: step(model, inputs, loss_fn)  # noqa: E731
    record = lambda: hooktui.record(model, inputs, loss_fn)  # noqa: E731

    def guarded() -> list[float]:
        with hooktui.guard(model):
            return timed_block(one, k)

    def guarded_without_node() -> list[float]:
        with hooktui.guard(model, find_node=False):
            return timed_block(one, k)

    def anomaly() -> list[float]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Anomaly Detection has been enabled"
            with torch.autograd.detect_anomaly():
                return timed_block(one, k)

    kinds = {"bare": lambda: timed_block(one, k), "guard": guarded, "guard_no_node": guarded_without_node, "detect_anomaly": anomaly,
             "record": lambda: timed_block(record, k)}
    for run in kinds.values():  # warm up
        run()
    times: dict[str, list[float]] = {name: [] for name in kinds}
    for _ in range(rounds):
        for name, run in kinds.items():
            times[name] += run()
    return {name: statistics.median(values) for name, values in times.items()}


def cases():
    yield resnet_case()
    yield mlp_case()
    for name in ("cnn", "transformer", "train_loop"):  # finite models: every step runs to the end
        path = ROOT / "sample_models" / f"{name}.py"
        if path.exists():
            loaded = load_target(path)
            yield f"sample_models/{name}.py", loaded.model, loaded.inputs, loaded.loss_fn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    args = parser.parse_args()
    k, rounds = (2, 3) if args.quick else (3, 7)
    torch.set_num_threads(1)
    print(f"machine: {machine()}")
    print(f"per training step (forward + backward), medians of {k} x {rounds} steps, ratios to bare, side by side:")
    print(f"{'model':38} {'bare ms':>8} {'guard':>8} {'find_node=False':>16} {'detect_anomaly':>15} {'record':>8} {'guard/anomaly':>14}")
    for label, model, inputs, loss_fn in cases():
        medians = measure(model, inputs, loss_fn, k, rounds)
        bare = medians["bare"]
        print(f"{label:38} {bare * 1e3:>8.2f} {medians['guard'] / bare:>7.2f}x {medians['guard_no_node'] / bare:>15.2f}x "
              f"{medians['detect_anomaly'] / bare:>14.2f}x "
              f"{medians['record'] / bare:>7.2f}x {medians['guard'] / medians['detect_anomaly']:>13.2f}x")


if __name__ == "__main__":
    main()
