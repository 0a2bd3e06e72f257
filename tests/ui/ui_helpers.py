"""Helpers for the UI tests: build apps on the sample models, wait for the worker."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from hooktui.commands.common import session_for
from hooktui.engine.loader import load_target
from hooktui.ui.app import HooktuiApp

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_models"
TIMEOUT = 20.0


def sample_app(name: str, *, legacy: bool | None = None, **kwargs) -> HooktuiApp:
    """An app on a sample model. `legacy`: None records no legacy firings; True records
    and shows them (`hooktui --legacy`); False records them hidden (plain `hooktui`)."""
    loaded = load_target(SAMPLES / name)
    session = session_for(loaded, pause=True, legacy=legacy is not None)
    if legacy is False:
        session.gate.skip_hooks.add("legacy_backward")
    return HooktuiApp(session=session, source_path=loaded.path, show_timings=False, **kwargs)


async def wait_for(pilot, predicate: Callable[[], bool], what: str = "condition", timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            app = pilot.app
            raise AssertionError(f"timed out waiting for {what}: state={app.state} cursor={app.history.cursor} n={len(app.history)}")
        await pilot.pause(0.01)


async def paused_at(pilot, position: int) -> None:
    """Wait until the live model is paused and the app shows firing `position`."""
    app = pilot.app
    await wait_for(pilot, lambda: app.state == "paused" and app.history.cursor == position, f"pause at {position}")


def run(coro) -> None:
    asyncio.run(coro)
