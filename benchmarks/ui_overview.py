"""Is the overview (`w`) fluent with 5,000 module calls? Records a stack of Linear(8, 8)
layers of 50 and of 5,000 module calls (real records, lazy statistics), opens the headless
app on each at 120x40 and, side by side:

- open: from `w` to the overview on screen (its rows built, the visible ones drawn);
- draw: one full repaint of the overview's visible rows, cold (each row's numbers read
  from its records, its line built) and warm (lines cached), timed around `render_line` for every line on screen
  (the records' own statistics are already computed: a recorded source reads them when
  it makes their text visible);
- step: `N` (step back) with the overview open, median and p95 over 40 presses: the rows
  follow the current firing; "plain": the same before the overview was opened (what a
  step costs the rest of the app, and the pilot's own settling);
- page: pagedown in the overview, median over 40 presses.

Run with `.venv/bin/python benchmarks/ui_overview.py`.
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

import torch  # noqa: E402
from torch import nn  # noqa: E402

from hooktui.engine.run.session import record  # noqa: E402
from hooktui.ui.app import HooktuiApp  # noqa: E402
from hooktui.ui.screens.overview import OverviewScreen  # noqa: E402
from hooktui.ui.widgets.overview import OverviewRows  # noqa: E402

PRESSES = 40


def trace_of(calls: int):
    """A run with `calls` module calls: the root and calls - 1 layers."""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(*[nn.Linear(8, 8) for _ in range(calls - 1)])
    trace = record(model, torch.randn(4, 8))
    return trace.info, trace.events


def p95(values: list[float]) -> float:
    return sorted(values)[min(len(values) - 1, round(0.95 * (len(values) - 1)))]


async def steps(pilot) -> list[float]:
    """Seconds per `N` (step back), each until the app has settled."""
    times = []
    for _ in range(PRESSES):
        t = time.perf_counter()
        await pilot.press("N")
        await pilot.pause()
        times.append(time.perf_counter() - t)
    return times


async def measure(info, events) -> dict[str, float]:
    app = HooktuiApp(recorded=(info, events), show_timings=False)
    out: dict[str, float] = {}
    async with app.run_test(size=(120, 40), notifications=False) as pilot:
        await pilot.press("G")
        await pilot.pause()
        out["plain p50"] = statistics.median(await steps(pilot))
        await pilot.press("G")
        await pilot.pause()
        start = time.perf_counter()
        await pilot.press("w")
        while not isinstance(app.screen, OverviewScreen):
            await pilot.pause(0.001)
        await pilot.pause()
        out["open"] = time.perf_counter() - start
        rows = app.screen.query_one(OverviewRows)
        height = rows.scrollable_content_region.height
        for kind in ("cold", "warm"):
            if kind == "cold":  # forget the rows' numbers and lines drawn when it opened
                rows._numbers.clear()
                rows._strips.clear()
            t = time.perf_counter()
            rows._base_style = rows.rich_style
            for y in range(height):
                rows.render_line(y)
            out[f"draw {kind}"] = time.perf_counter() - t
        times = await steps(pilot)
        out["step p50"], out["step p95"] = statistics.median(times), p95(times)
        await pilot.press("home")
        pages = []
        for _ in range(PRESSES):
            t = time.perf_counter()
            await pilot.press("pagedown")
            await pilot.pause()
            pages.append(time.perf_counter() - t)
        out["page p50"] = statistics.median(pages)
        out["rows"] = len(rows.calls)
    return out


def main() -> None:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}, "
          f"torch {torch.__version__}, headless app at 120x40, load average {load:.1f}")
    traces = {calls: trace_of(calls) for calls in (50, 5_000)}
    results = {}
    # Alternate, so that load from other processes hits both alike.
    for _ in range(2):
        for calls, (info, events) in traces.items():
            results.setdefault(calls, []).append((len(events), asyncio.run(measure(info, events))))
    keys = ("open", "draw cold", "draw warm", "plain p50", "step p50", "step p95", "page p50")
    print(f"{'calls':>6} {'firings':>8} " + " ".join(f"{k + ' ms':>13}" for k in keys))
    best = {}
    for calls, runs in results.items():
        firings = runs[0][0]
        best[calls] = {k: min(r[k] for _, r in runs) for k in keys}
        print(f"{calls:>6} {firings:>8} " + " ".join(f"{best[calls][k] * 1e3:>13.1f}" for k in keys))
    print(f"5,000 vs 50 calls: step p50 {best[5_000]['step p50'] / best[50]['step p50']:.2f}x, "
          f"draw cold {best[5_000]['draw cold'] / best[50]['draw cold']:.2f}x (best of 2 runs each)")


if __name__ == "__main__":
    main()
