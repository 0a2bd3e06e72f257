"""Side-by-side timings: untraced forward+backward vs the same run under hooktui.record.

Ratios measured in one run on the same machine are what we report (docs/benchmarks.md);
absolute times on shared machines are noise. Run with `make bench`.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hooktui.engine.inputs import default_loss, split_inputs  # noqa: E402
from hooktui.engine.loader import load_target  # noqa: E402
from hooktui.engine.session import record  # noqa: E402
from hooktui.engine.stats import StatsOptions, describe  # noqa: E402


def plain_step(model, inputs, loss_fn):
    args, kwargs = split_inputs(inputs)
    out = model(*args, **kwargs)
    loss = loss_fn(out) if loss_fn else default_loss(out)
    loss.backward()
    for p in model.parameters():
        p.grad = None


def median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def deep_mlp(width: int = 256, depth: int = 48):
    torch.manual_seed(0)
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.LayerNorm(width), nn.ReLU(inplace=True)]
    return nn.Sequential(*layers), torch.randn(64, width)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}, torch {torch.__version__}, 1 torch thread")
    print(f"{'model':28} {'firings':>8} {'plain ms':>9} {'traced ms':>10} {'ratio':>6} {'us/firing':>10}")
    cases = []
    for name in ("seed", "cnn", "rnn", "transformer"):
        path = ROOT / "sample_models" / f"{name}.py"
        if path.exists():
            loaded = load_target(path)
            cases.append((f"sample_models/{name}.py", loaded.model, loaded.inputs, loaded.loss_fn))
    model, x = deep_mlp()
    cases.append(("MLP 48x(Linear,LN,ReLU) 256", model, x, None))
    for label, model, inputs, loss_fn in cases:
        plain_step(model, inputs, loss_fn)  # warm up
        record(model, inputs, loss_fn)
        plain = median_time(lambda: plain_step(model, inputs, loss_fn), args.repeat)
        traced = median_time(lambda: record(model, inputs, loss_fn), args.repeat)
        firings = len(record(model, inputs, loss_fn).events)
        print(
            f"{label:28} {firings:>8} {plain * 1e3:>9.2f} {traced * 1e3:>10.2f} {traced / plain:>6.1f} "
            f"{(traced - plain) / firings * 1e6:>10.1f}"
        )
    print()
    print("tensor summary cost (describe(), exact up to 2^20 elements, sampled beyond):")
    print(f"{'elements':>12} {'ms':>8} {'approx':>7} {'values kept':>12}")
    for numel in (10**3, 10**5, 10**7, 4 * 10**7):
        tensor = torch.randn(numel // 1000, 1000)
        ms = median_time(lambda: describe("x", tensor), 3) * 1e3
        rec = describe("x", tensor)
        print(f"{numel:>12} {ms:>8.2f} {str(rec.stats.approx):>7} {len(rec.values):>12}")
    assert StatsOptions().max_values >= len(rec.values)


if __name__ == "__main__":
    main()
