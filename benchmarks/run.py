"""Side-by-side timings: a bare forward+backward, the same with plain hooks computing
statistics (the floor: what any hook-based tool pays), and under hooktui.record.

Ratios measured in one run on the same machine are what we report (docs/benchmarks.md);
absolute times on shared machines are noise. The three runs of a model alternate, so
load from other processes hits them alike. Run with `make bench`; `--quick` for a
shorter run. The memory benchmark is benchmarks/memory.py (its own process, for RSS).
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from models import deep_linear, mlp_case, resnet_case  # noqa: E402

from hooktui.engine.run.inputs import default_loss, split_inputs  # noqa: E402
from hooktui.engine.run.loader import load_target  # noqa: E402
from hooktui.engine.run.session import record  # noqa: E402
from hooktui.engine.summaries.stats import StatsOptions, describe  # noqa: E402


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{cpu}, {os.cpu_count()} cores, python {platform.python_version()}, "
            f"torch {torch.__version__}, 1 torch thread, load average {os.getloadavg()[0]:.1f}")


def bare_step(model, inputs, loss_fn):
    args, kwargs = split_inputs(inputs)
    out = model(*args, **kwargs)
    loss = loss_fn(out) if loss_fn else default_loss(out)
    loss.backward()
    for p in model.parameters():
        p.grad = None


def _item_stats(t: torch.Tensor) -> None:
    if t.is_floating_point() and t.numel() > 1:
        t = t.detach()
        t.min().item(), t.max().item(), t.mean().item(), t.std().item()


def plain_hooks_step(model, inputs, loss_fn):
    """The floor: a forward hook on every module computing min/max/mean/std with .item()
    for each input and output, and a tensor hook doing the same for each output's gradient
    (full backward hooks would break the in-place ReLUs of the ResNet)."""

    def on_forward(module, args, output):
        for t in list(args) + [output]:
            if isinstance(t, torch.Tensor):
                _item_stats(t)
        if isinstance(output, torch.Tensor) and output.requires_grad:
            output.register_hook(_item_stats)

    handles = [m.register_forward_hook(on_forward) for m in model.modules()]
    try:
        bare_step(model, inputs, loss_fn)
    finally:
        for h in handles:
            h.remove()


def side_by_side(fns: list, repeat: int) -> list[float]:
    """Median seconds of each fn, the fns alternating within each repeat."""
    for fn in fns:
        fn()  # warm up
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            times[i].append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def ratio_table(cases, repeat: int) -> None:
    print(f"{'model':38} {'firings':>8} {'bare ms':>8} {'plain hooks':>12} {'hooktui':>8} {'us/firing':>10}")
    for label, model, inputs, loss_fn in cases:
        bare, plain, traced = side_by_side(
            [lambda: bare_step(model, inputs, loss_fn), lambda: plain_hooks_step(model, inputs, loss_fn),
             lambda: record(model, inputs, loss_fn)],
            repeat,
        )
        firings = len(record(model, inputs, loss_fn).events)
        print(f"{label:38} {firings:>8} {bare * 1e3:>8.2f} {plain / bare:>11.2f}x {traced / bare:>7.2f}x "
              f"{(traced - bare) / firings * 1e6:>10.1f}")


def scaling_table(sizes, repeat: int) -> None:
    print(f"{'modules':>8} {'firings':>8} {'bare ms':>9} {'hooktui ms':>11} {'us/firing':>10}")
    per_firing = []
    for n in sizes:
        model, x = deep_linear(n)
        reps = max(1, repeat if n <= 1000 else repeat // 2)
        bare, traced = side_by_side([lambda: bare_step(model, x, None), lambda: record(model, x, None)], reps)
        firings = len(record(model, x, None).events)
        us = (traced - bare) / firings * 1e6
        per_firing.append(us)
        print(f"{n:>8} {firings:>8} {bare * 1e3:>9.1f} {traced * 1e3:>11.1f} {us:>10.1f}")
    print(f"per-firing cost, {sizes[-1]} vs {sizes[0]} modules: {per_firing[-1] / per_firing[0]:.2f}x "
          "(1.0x = linear total cost)")


def summary_table() -> None:
    print(f"{'elements':>12} {'firing ms':>10} {'read ms':>8} {'approx':>7} {'values kept':>12}")
    for numel in (10**3, 10**5, 10**7, 4 * 10**7):
        base = torch.randn(numel // 1000, 1000)
        takes, reads = [], []
        for _ in range(3):
            tensor = base.clone()  # a new tensor: an unchanged one seen again would reuse its summary
            start = time.perf_counter()
            rec = describe("x", tensor)
            takes.append(time.perf_counter() - start)
            reads.append(_time(lambda: rec.stats))
        print(f"{numel:>12} {statistics.median(takes) * 1e3:>10.2f} {statistics.median(reads) * 1e3:>8.2f} "
              f"{str(rec.stats.approx):>7} {len(rec.values):>12}")
    assert StatsOptions().max_values >= len(rec.values)


def _time(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="fewer repeats, scaling up to 1,000 modules")
    args = parser.parse_args()
    repeat = 3 if args.quick else args.repeat
    torch.set_num_threads(1)
    print(f"machine: {machine()}")
    print()
    print("run-through, forward + backward of one batch, ratios to bare (medians, side by side):")
    cases = [resnet_case(), mlp_case()]
    for name in ("seed", "cnn", "rnn", "transformer"):
        path = ROOT / "sample_models" / f"{name}.py"
        if path.exists():
            loaded = load_target(path)
            cases.append((f"sample_models/{name}.py", loaded.model, loaded.inputs, loaded.loss_fn))
    ratio_table(cases, repeat)
    print()
    print("scaling: a deep stack of Linear(8, 8), batch 4:")
    scaling_table((100, 1000) if args.quick else (100, 1000, 10000), repeat)
    print()
    print("one tensor: cost at the firing (describe) and when first read (.stats):")
    summary_table()


if __name__ == "__main__":
    main()
