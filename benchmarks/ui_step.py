"""How long the app takes to show the next firing when `n` is pressed at a live pause.

A 1,000-module model (a deep stack of Linear(8, 8)) runs in the headless app at 120x40
(or the size given: `ui_step.py 80x24`, where the lower panes are tabs):
`c` with a breakpoint on one module's backward_pre lets it run to about firing 5,000, in
the middle of its backward, where it pauses. Then `n` is pressed 60 times. Each step is a
real one: the model thread is released, runs to its next firing, records it and pauses
again, and the app takes the firing and redraws.

What is timed is the app's own handling, measured inside the app: from the moment the
step action starts (the key has been read) to the moment the screen has been refreshed
with the new firing (`call_after_refresh` after the panes were rendered). The test
pilot's own settling is not in it. The model's work between two firings is (a step
cannot show a firing before the model has made it): it is printed beside, as the
median time between the step and the firing's arrival in the app.

`N` (back) is then timed the same way after `c` has run on to the next stop, and beside
both, the floor: a bare Textual app at the same size whose key changes one line of text.
And a second, fairer floor: a step changes much of the screen where that key changes one
line, so a bare Textual app whose key rewrites as many cells of plain text, on as many
lines, as a step of hooktui changes (counted here: the cells whose character or style
differ between the screens before and after a few untimed `n`), at the same size. The
ratio to it says how far hooktui is from Textual's own cost of drawing that much.

Run with `.venv/bin/python benchmarks/ui_step.py` (`make bench` does).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import torch  # noqa: E402

from models import deep_linear  # noqa: E402
from textual.app import App  # noqa: E402
from textual.widgets import Footer, Static  # noqa: E402

from hooktui.engine.analysis.breakpoints import Breakpoint  # noqa: E402
from hooktui.engine.run.session import Session  # noqa: E402
from hooktui.ui import app as app_module  # noqa: E402
from hooktui.ui.app import HooktuiApp  # noqa: E402
from hooktui.ui.sources import LiveSource  # noqa: E402

MODULES = 1000  # 999 Linear layers and the Sequential holding them
HISTORY = 5000  # firings in the history when the steps start
STEPS = 60
COUNTED = 5  # untimed steps whose changed cells are counted (the fair floor's size)
SIZE = (120, 40)  # the terminal's, for the app and both floors (main's first argument sets it)


def stop_module(layers: int, history: int) -> str:
    """The layer whose backward_pre comes at about firing `history`: forward makes two
    firings per module; in backward each layer makes four (backward_pre, two param_grad,
    backward), last layer first, after the root's backward_pre."""
    modules = layers + 1
    into_backward = history - 2 * modules - 1
    return str(max(0, layers - 1 - into_backward // 4))


class TimedApp(HooktuiApp):
    """The app, with each step timed from the action to the refreshed screen."""

    CSS_PATH = str(Path(app_module.__file__).parent / HooktuiApp.CSS_PATH)  # relative to hooktui/ui, not here

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.step_times: list[float] = []
        self.arrivals: list[float] = []
        self.render_times: list[float] = []
        self._step_started: float | None = None
        self._step_from = 0
        self.back_times: list[float] = []

    def action_step(self) -> None:
        self._step_started = time.perf_counter()
        self._step_from = len(self.history)
        super().action_step()

    def action_back(self) -> None:
        started = time.perf_counter()
        super().action_back()
        self.call_after_refresh(lambda: self.back_times.append(time.perf_counter() - started))

    def _render_current(self) -> None:
        started = self._step_started
        arrived = started is not None and len(self.history) > self._step_from and self.source.state == "paused"
        if arrived:
            self.arrivals.append(time.perf_counter() - started)
        t = time.perf_counter()
        super()._render_current()
        if arrived:
            self.render_times.append(time.perf_counter() - t)
            self._step_started = None
            self.call_after_refresh(lambda: self.step_times.append(time.perf_counter() - started))


def screen_cells(app: App) -> list[list[tuple]]:
    """The screen as (character, style) per cell."""
    return [[(char, segment.style) for segment in strip for char in segment.text]
            for strip in app.screen._compositor.render_strips()]


def changed_cells(before: list[list[tuple]], after: list[list[tuple]]) -> tuple[int, int]:
    """(cells, lines) whose character or style differ between two screens."""
    cells = lines = 0
    for old, new in zip(before, after):
        differ = sum(a != b for a, b in zip(old, new)) + abs(len(old) - len(new))
        cells += differ
        lines += bool(differ)
    return cells, lines


async def measure() -> tuple[list[float], list[float], int, list[float], tuple[int, int]]:
    torch.manual_seed(0)
    model, x = deep_linear(MODULES - 1)
    session = Session(model, x, pause=True, label="deep_linear")
    session.add_breakpoint(Breakpoint.on_module(stop_module(MODULES - 1, HISTORY), phase="backward", hook="backward_pre"))
    app = TimedApp(LiveSource(session), show_timings=False)
    async with app.run_test(size=SIZE, notifications=False) as pilot:
        await _until(pilot, lambda: app.source.state == "paused" and len(app.history) >= 1, 60)
        await pilot.press("c")
        await _until(pilot, lambda: app.source.state == "paused" and len(app.history) > HISTORY // 2, 300)
        await pilot.pause()
        reached = len(app.history)
        for i in range(STEPS):
            await pilot.press("n")
            await _until(pilot, lambda: len(app.step_times) > i, 30)
        # What a step changes on the screen, counted outside the timed steps.
        counts = []
        for i in range(STEPS, STEPS + COUNTED):
            await pilot.pause()
            before = screen_cells(app)
            await pilot.press("n")
            await _until(pilot, lambda: len(app.step_times) > i, 30)
            await pilot.pause()
            counts.append(changed_cells(before, screen_cells(app)))
        del app.step_times[STEPS:]
        # `N` after `c`: back through the history, from the firing `c` stopped at.
        await pilot.press("c")
        await _until(pilot, lambda: app.source.state != "running" and len(app.history) > reached + STEPS + COUNTED, 300)
        await pilot.pause()
        for i in range(STEPS):
            await pilot.press("N")
            await _until(pilot, lambda: len(app.back_times) > i, 30)
        await pilot.press("q")
    changed = (round(statistics.median(c for c, _ in counts)), round(statistics.median(n for _, n in counts)))
    return app.step_times, app.arrivals, reached, app.back_times, changed


class BareApp(App):
    """The floor: a Textual app whose key changes one line of text, at the same size."""

    BINDINGS = [("n", "step", "Next")]

    def __init__(self) -> None:
        super().__init__()
        self.times: list[float] = []
        self.count = 0

    def compose(self):
        yield Static("firing 0", id="line")
        yield Footer()

    def action_step(self) -> None:
        started = time.perf_counter()
        self.count += 1
        self.query_one("#line", Static).update(f"firing {self.count}")
        self.call_after_refresh(lambda: self.times.append(time.perf_counter() - started))


class SameChangeApp(BareApp):
    """The fair floor: a Textual app whose key rewrites `cells` cells of plain text on `lines`
    lines (one Static of that many lines, its size fixed: no layout), as much of the
    screen as a step of hooktui changes."""

    def __init__(self, cells: int, lines: int) -> None:
        super().__init__()
        self.lines = max(1, lines)
        self.width = max(1, min(SIZE[0] - 2, -(-cells // self.lines)))

    def compose(self):
        block = Static(self._text(), id="line")
        block.styles.width, block.styles.height = self.width, self.lines
        yield block
        yield Footer()

    def _text(self) -> str:
        # Every cell differs from the last key's: each line is its numbers shifted by one.
        return "\n".join((f"{self.count + row:>7} " * (self.width // 8 + 1))[: self.width] for row in range(self.lines))

    def action_step(self) -> None:
        started = time.perf_counter()
        self.count += 1
        self.query_one("#line", Static).update(self._text())
        self.call_after_refresh(lambda: self.times.append(time.perf_counter() - started))


async def measure_bare(app: BareApp | None = None) -> list[float]:
    app = app or BareApp()
    async with app.run_test(size=SIZE, notifications=False) as pilot:
        await pilot.pause()
        for i in range(STEPS):
            await pilot.press("n")
            await _until(pilot, lambda: len(app.times) > i, 30)
    return app.times


async def _until(pilot, condition, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the app did not get there in time")
        await pilot.pause(0.01)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    global SIZE
    if len(sys.argv) > 1:
        SIZE = tuple(int(v) for v in sys.argv[1].split("x"))
    torch.set_num_threads(1)
    start = time.perf_counter()
    bare = asyncio.run(measure_bare())
    steps, arrivals, reached, backs, (cells, lines) = asyncio.run(measure())
    same = asyncio.run(measure_bare(SameChangeApp(cells, lines)))
    print(f"app step at a live pause, {SIZE[0]}x{SIZE[1]}, {MODULES}-module model paused mid-backward with {reached} firings "
          f"(load average {os.getloadavg()[0]:.1f}; {time.perf_counter() - start:.0f} s in all):")
    floor, fair = statistics.median(bare), statistics.median(same)
    for label, times in (("bare Textual app, a key that changes one line", bare),
                         (f"bare Textual app, a key that rewrites {cells} cells on {lines} lines (as much as a step changes)", same),
                         ("n at a live pause", steps), ("N after c (back through the history)", backs)):
        print(f"  {label}: {len(times)} keys: p50 {statistics.median(times) * 1e3:.1f} ms, p95 "
              f"{percentile(times, 0.95) * 1e3:.1f} ms, max {max(times) * 1e3:.1f} ms "
              f"({statistics.median(times) / floor:.2f}x bare, {statistics.median(times) / fair:.2f}x the same-change app; "
              "key to refreshed screen, inside the app)")
    print(f"  of n, the model reaching its next firing and handing it over: median {statistics.median(arrivals) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
