"""Where a step's time goes in the app: ui_step.py's setup (1,000-module model, paused
mid-backward, 120x40), 40 `n` (or `N`) keys, each part timed inside the app.

    python benchmarks/ui_step_parts.py n      # or N; a size as a second argument: 80x24

A timer around each part (inclusive): the screen's update (layout and the compositor's
paint), each widget's paint (`render_lines`, by class and id), hooktui's own work before
the paint (`_render_current` and the panes' `show`); and what the paint sent: the lines
and cells of the screen the update repainted (the spans of Textual's partial update).
Medians over the keys after the first 5. The timers cost time themselves: read the shares,
and ui_step.py for the key-to-screen time. Wraps Textual's private methods: a benchmark
only, to be fixed when Textual renames them.
"""

from __future__ import annotations

import asyncio
import collections
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import torch  # noqa: E402
import ui_step  # noqa: E402
from textual._compositor import Compositor  # noqa: E402
from textual.screen import Screen  # noqa: E402
from textual.widget import Widget  # noqa: E402

from hooktui.ui.app import HooktuiApp  # noqa: E402
from hooktui.ui.sources import LiveSource  # noqa: E402
from hooktui.ui.widgets import tensors, values  # noqa: E402
from hooktui.ui.widgets.lower import LowerPanes  # noqa: E402

KEYS = 40
parts: dict[str, float] = collections.defaultdict(float)


def timed(owner, name: str, label: str) -> None:
    original = getattr(owner, name)

    def wrapper(self, *args, **kwargs):
        started = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            parts[label] += time.perf_counter() - started

    setattr(owner, name, wrapper)


def _subclasses(cls: type) -> list[type]:
    return [cls, *(c for sub in cls.__subclasses__() for c in _subclasses(sub))]


def paint_by_widget() -> None:
    """Each widget's paint, `render_lines`, timed where a class defines its own (the
    timeline and its scrollbar keep painted lines in theirs) and counted once a call (the
    outermost), with the lines it painted."""
    painting: set[int] = set()

    def timed_render_lines(original):
        def render_lines(self, crop):
            if id(self) in painting:
                return original(self, crop)
            painting.add(id(self))
            started = time.perf_counter()
            try:
                return original(self, crop)
            finally:
                painting.discard(id(self))
                parts[f"paint: {type(self).__name__}#{self.id or ''}"] += time.perf_counter() - started

        return render_lines

    for cls in set(_subclasses(Widget)):
        if "render_lines" in vars(cls):
            cls.render_lines = timed_render_lines(vars(cls)["render_lines"])


def spans_sent() -> None:
    original = Compositor.render_partial_update

    def render_partial_update(self):
        update = original(self)
        if update is not None:
            parts["lines repainted"] += len({y for y, _, _ in update.spans})
            parts["cells repainted"] += sum(x2 - x1 + 1 for _, x1, x2 in update.spans)
        return update

    Compositor.render_partial_update = render_partial_update


PARTS = [
    (Screen, "_on_timer_update", "screen update (layout and paint)"),
    (Screen, "_refresh_layout", "  layout"),
    (Screen, "_compositor_refresh", "  paint"),
    (HooktuiApp, "_render_current", "hooktui before the paint (_render_current)"),
    (LowerPanes, "show", "  lower panes"),
    (LowerPanes, "refresh_explain", "    explain"),
    (tensors.TensorsPane, "show", "    tensors"),
    (values.ValuesPane, "show", "    values"),
    (HooktuiApp, "_render_tree", "  module tree marks"),
    (HooktuiApp, "_render_status", "  status line"),
]
LABELS = [label for _, _, label in PARTS]


def instrument() -> None:
    for owner, name, label in PARTS:
        timed(owner, name, label)
    paint_by_widget()
    spans_sent()


class PartsApp(ui_step.TimedApp):
    """Each key's parts, kept when its screen is refreshed."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.per_key: list[dict[str, float]] = []

    def _keep(self) -> None:
        self.per_key.append(dict(parts))

    def action_step(self) -> None:
        parts.clear()
        super().action_step()

    def action_back(self) -> None:
        parts.clear()
        super().action_back()
        self.call_after_refresh(self._keep)

    def _render_current(self) -> None:
        stepping = self._step_started is not None
        super()._render_current()
        if stepping and self._step_started is None:
            self.call_after_refresh(self._keep)


async def measure(key: str, size: tuple[int, int]) -> tuple[list[float], list[dict[str, float]]]:
    torch.manual_seed(0)
    model, x = ui_step.deep_linear(ui_step.MODULES - 1)
    session = ui_step.Session(model, x, pause=True, label="deep_linear")
    session.add_breakpoint(ui_step.Breakpoint.on_module(ui_step.stop_module(ui_step.MODULES - 1, ui_step.HISTORY),
                                                        phase="backward", hook="backward_pre"))
    app = PartsApp(LiveSource(session), show_timings=False)
    async with app.run_test(size=size, notifications=False) as pilot:
        await ui_step._until(pilot, lambda: app.source.state == "paused" and len(app.history) >= 1, 60)
        await pilot.press("c")
        await ui_step._until(pilot, lambda: app.source.state == "paused" and len(app.history) > ui_step.HISTORY // 2, 300)
        await pilot.pause()
        times = app.step_times if key == "n" else app.back_times
        for i in range(KEYS):
            await pilot.press(key)
            await ui_step._until(pilot, lambda: len(times) > i, 30)
        await pilot.press("q")
    return times, app.per_key


def main() -> None:
    key = sys.argv[1] if len(sys.argv) > 1 else "n"
    size = tuple(int(v) for v in (sys.argv[2] if len(sys.argv) > 2 else "120x40").split("x"))
    torch.set_num_threads(1)
    instrument()
    times, per_key = asyncio.run(measure(key, size))
    times, per_key = times[5:], per_key[5:]
    print(f"`{key}` at {size[0]}x{size[1]}: key to refreshed screen p50 {statistics.median(times) * 1e3:.1f} ms "
          f"(timers included), {len(times)} keys; medians per key:")
    names = set().union(*per_key)
    medians = {name: statistics.median(k.get(name, 0.0) for k in per_key) for name in names}
    paints = sorted((n for n in names if n.startswith("paint: ")), key=lambda n: -medians[n])
    for name in [*LABELS, *paints]:
        if medians.get(name, 0.0) >= 0.0002:
            print(f"  {name}: {medians[name] * 1e3:.2f} ms")
    for name in ("lines repainted", "cells repainted"):
        print(f"  {name}: {medians.get(name, 0.0):.0f}")


if __name__ == "__main__":
    main()
