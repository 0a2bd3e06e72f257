"""The app's history packed while the model ran (engine/records/held.py, ui/history.py):
stepping back across a packed chunk at 80x24 shows what an app whose history is not packed
shows, pane by pane."""

from __future__ import annotations

import torch
from torch import nn

from hooktui.engine.records import held
from hooktui.engine.run.session import Session
from hooktui.engine.summaries import lazy_stats
from hooktui.ui.app import HooktuiApp
from hooktui.ui.sources import LiveSource

from screen_text import screen_rows
from ui_helpers import paused_at_start, run, wait_for


def _app() -> HooktuiApp:
    torch.manual_seed(0)
    layers: list[nn.Module] = []
    for _ in range(12):
        layers += [nn.Linear(8, 8), nn.Tanh()]
    session = Session(nn.Sequential(*layers), torch.randn(2, 8), pause=True, legacy=True, keep_events=False)
    session.gate.skip_hooks.add("legacy_backward")  # as `hooktui open` records them, hidden
    return HooktuiApp(LiveSource(session), show_timings=False)


def _screens(packs: bool, monkeypatch) -> tuple[list[list[str]], int]:
    """Run to the end, go to the first firing of the second chunk, step back twice (into
    the first chunk) with each pane shown: the screens, and how many firings were packed."""
    monkeypatch.setattr(held, "PACK_AFTER", 0 if packs else 1 << 40)
    monkeypatch.setattr(lazy_stats, "SNAPSHOT_BUDGET_BYTES", 1024)  # both apps: old firings' values dropped alike
    screens: list[list[str]] = []
    packed = 0

    async def script():
        nonlocal packed
        app = _app()
        async with paused_at_start(app, (80, 24)) as pilot:
            await pilot.press("c")
            await wait_for(pilot, lambda: app.state == "finished", "the run's end")
            packed = app.history.events.packed
            app.goto(held.CHUNK + 1, follow=False)
            await pilot.pause()
            for key in ("N", "N", "x", "a", "o", "t"):
                await pilot.press(key)
                await pilot.pause()
                screens.append(screen_rows(app))

    run(script())
    return screens, packed


def test_stepping_back_across_a_packed_chunk_shows_what_an_unpacked_history_shows(monkeypatch):
    packed_screens, packed = _screens(True, monkeypatch)
    plain_screens, not_packed = _screens(False, monkeypatch)
    assert packed >= 2 * held.CHUNK and not_packed == 0
    assert packed_screens == plain_screens
    assert any("#" in row for row in packed_screens[0])  # something drawn (a firing's number)
