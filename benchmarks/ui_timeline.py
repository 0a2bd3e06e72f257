"""Is the timeline fluent with 100,000 firings? Steps through a recorded trace of 1,000 and
of 100,000 firings in the headless app and reports the time per step side by side: a
timeline that re-rendered everything per step would be ~100x slower on the larger one.

Run with `.venv/bin/python benchmarks/ui_timeline.py`.
"""

from __future__ import annotations

import asyncio
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hooktui.engine.records.records import Event, ModuleInfo, TensorRecord, TensorStats, TraceInfo  # noqa: E402
from hooktui.ui.app import HooktuiApp  # noqa: E402

STEPS = 40


def synthetic(n: int):
    modules = [ModuleInfo("", "Net"), ModuleInfo("a", "Linear"), ModuleInfo("b", "ReLU")]
    info = TraceInfo(model="Synthetic", modules=modules, loss="none")
    stats = TensorStats(count=4, finite=4, min=0.0, max=1.0, mean=0.5, std=0.5, hist=[1] * 16, hist_range=[0.0, 1.0])
    tensor = TensorRecord(name="output", shape=[2, 2], dtype="float32", device="cpu", stats=stats, values=[0.0, 1.0, 0.5, 0.25], values_shape=[2, 2])
    events = []
    for i in range(n):
        phase = "forward" if i < n // 2 else "backward"
        events.append(Event(index=i, phase=phase, hook=phase, module="ab"[i % 2], module_type="Linear", call=i // 2, tensors=[tensor]))
    return info, events


async def measure(n: int) -> tuple[float, float, float]:
    info, events = synthetic(n)
    start = time.perf_counter()
    app = HooktuiApp(recorded=(info, events), show_timings=False)
    async with app.run_test(size=(120, 40), notifications=False) as pilot:
        await pilot.pause()
        mounted = time.perf_counter() - start
        await pilot.press("G")  # to the end: the far end of a long timeline
        await pilot.pause()
        steps = []
        for _ in range(STEPS):
            t = time.perf_counter()
            await pilot.press("N")
            await pilot.pause()
            steps.append(time.perf_counter() - t)
        t = time.perf_counter()
        await pilot.press("g")
        await pilot.pause()
        jump = time.perf_counter() - t
    return mounted, statistics.median(steps), jump


def main() -> None:
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}, headless app at 120x40")
    print(f"{'firings':>8} {'mount s':>8} {'step ms':>8} {'jump ms':>8}")
    rows = {}
    for n in (1_000, 100_000):
        rows[n] = asyncio.run(measure(n))
        mounted, step, jump = rows[n]
        print(f"{n:>8} {mounted:>8.2f} {step * 1e3:>8.1f} {jump * 1e3:>8.1f}")
    print(f"step time, 100,000 vs 1,000 firings: {rows[100_000][1] / rows[1_000][1]:.2f}x")


if __name__ == "__main__":
    main()
