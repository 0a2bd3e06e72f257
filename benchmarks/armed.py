"""What `hooktui.arm(model)` costs while nobody is attached: a training step of an armed model
beside the same step unarmed, side by side in one run (issue 34, item 1: at most 1.02x).

Per model, blocks of K steps (forward, backward, gradients set to None) alternate on the
same model: bare, then armed (hooktui.arm before the block, disarm after it, both outside
the timing). The medians of the per-step times are reported, and their ratio. Results:
docs/benchmarks.md.

    .venv/bin/python benchmarks/armed.py [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from models import mlp_case, resnet_case  # noqa: E402
from run import machine  # noqa: E402

import hooktui  # noqa: E402


def block(model, x, loss_fn, k: int) -> list[float]:
    times = []
    for _ in range(k):
        start = time.perf_counter()
        out = model(x)
        (loss_fn(out) if loss_fn else out.float().sum()).backward()
        for p in model.parameters():
            p.grad = None
        times.append(time.perf_counter() - start)
    return times


def measure(case, repeats: int, k: int) -> tuple[float, float]:
    _label, model, x, loss_fn = case
    block(model, x, loss_fn, 3)  # warm up
    bare, armed = [], []
    for _ in range(repeats):
        bare += block(model, x, loss_fn, k)
        handle = hooktui.arm(model)
        assert handle.armed
        armed += block(model, x, loss_fn, k)
        handle.disarm()
    return statistics.median(bare), statistics.median(armed)


def hook_cost(calls: int = 200_000) -> float:
    """Seconds one call of the armed root pre-hook takes (nobody attached): what an armed step
    adds, besides PyTorch's taking the slow path of the root's own call for having a hook."""
    model = torch.nn.Linear(1, 1)
    handle = hooktui.arm(model)
    hook = handle._root_pre
    start = time.perf_counter()
    for _ in range(calls):
        hook(model, (), {})
    elapsed = time.perf_counter() - start
    handle.disarm()
    return elapsed / calls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    repeats, k = (3, 5) if args.quick else (9, 10)
    print(machine())
    print(f"{repeats} repeats of {k} steps each way, alternating; medians per step")
    print("| model | bare step | armed, nobody attached | ratio |")
    print("|---|---|---|---|")
    for case in (resnet_case(), mlp_case()):
        bare, armed = measure(case, repeats, k)
        print(f"| {case[0]} | {bare * 1e3:.2f} ms | {armed * 1e3:.2f} ms | {armed / bare:.3f}x |", flush=True)
    print(f"the armed root pre-hook itself: {hook_cost() * 1e6:.2f} µs a call (one call a step)")


if __name__ == "__main__":
    main()
