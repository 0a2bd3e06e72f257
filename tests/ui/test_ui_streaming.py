"""`c` through a model while the app draws: the app's drawing must leave the model's
thread most of the time (they share the GIL), whatever one redraw costs."""

from __future__ import annotations

import time

import torch
from torch import nn

from hooktui.engine.run.session import Session
from hooktui.ui import app as app_module
from hooktui.ui.app import HooktuiApp
from hooktui.ui.sources import LiveSource
from hooktui.ui.widgets.timeline import Timeline

from ui_helpers import paused_at_start, run, wait_for


class Slow(nn.Module):
    """A layer whose forward takes a while (sleeping lets the app's thread run)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        time.sleep(0.03)
        return self.fc(x)


def test_a_slow_redraw_spaces_the_next_ones_and_the_timeline_still_gets_every_firing(monkeypatch):
    torch.manual_seed(0)
    model = nn.Sequential(*[Slow() for _ in range(60)])  # ~1.8 s of forward
    app = HooktuiApp(LiveSource(Session(model, torch.randn(2, 4), pause=True)), show_timings=False)
    slow = 0.15
    redraws: list[float] = []
    grow, redraw = HooktuiApp._grow_timeline, HooktuiApp._redraw
    in_redraw = []

    def costly_grow(self) -> None:
        if in_redraw:  # part of a redraw while streaming
            redraws.append(time.monotonic())
            time.sleep(slow)  # as on a big screen
        grow(self)

    def timed_redraw(self) -> None:
        in_redraw.append(True)
        try:
            redraw(self)
        finally:
            in_redraw.clear()

    monkeypatch.setattr(HooktuiApp, "_grow_timeline", costly_grow)
    monkeypatch.setattr(HooktuiApp, "_redraw", timed_redraw)

    async def script():
        async with paused_at_start(app) as pilot:
            await pilot.press("c")
            await wait_for(pilot, lambda: app.state == "finished", "the end")
            n = len(app.history)
            assert n > 100 and app.query_one(Timeline).row_count == n
            assert app.history.cursor == n - 1

    run(script())
    share = app_module.STREAMING_UI_SHARE
    assert app._redraw_gap >= slow * (1 - share) / share
    gaps = [b - a for a, b in zip(redraws, redraws[1:])]
    assert len(redraws) >= 2, "the run streamed long enough to redraw twice"
    # After the first costly redraw, each next one waits for the gap that keeps drawing
    # at most STREAMING_UI_SHARE of the time (the fixed RUNNING_REDRAW would be 0.1 s).
    assert min(gaps) >= slow + slow * (1 - share) / share * 0.9, gaps
