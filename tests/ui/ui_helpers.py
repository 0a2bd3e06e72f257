"""Helpers for the UI tests: record a sample model's step, build apps on the sample models,
wait for the worker and step the live model."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from hooktui.commands.common import session_for
from hooktui.engine.run.loader import load_target
from hooktui.engine.run.session import record
from hooktui.ui.app import HooktuiApp
from hooktui.ui.sources import LiveSource

from burst import burst

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_models"
TIMEOUT = 60.0  # a safety net: waits end as soon as their condition holds


def recorded(name: str, **kwargs):
    """A sample model's step recorded (`record`'s keywords): its trace's info and firings."""
    loaded = load_target(SAMPLES / name)
    trace = record(loaded.model, loaded.inputs, loaded.loss_fn, **kwargs)
    return trace.info, trace.events


def sample_app(name: str, *, legacy: bool | None = None, **kwargs) -> HooktuiApp:
    """An app on a sample model. `legacy`: None records no legacy firings; True records
    and shows them (`hooktui --legacy`); False records them hidden (plain `hooktui`)."""
    loaded = load_target(SAMPLES / name)
    session = session_for(loaded, pause=True, legacy=legacy is not None)
    if legacy is False:
        session.gate.skip_hooks.add("legacy_backward")
    return HooktuiApp(LiveSource(session), source_path=loaded.path, show_timings=False, **kwargs)


async def wait_for(pilot, predicate: Callable[[], bool], what: str = "condition", timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            app = pilot.app
            raise AssertionError(f"timed out waiting for {what}: state={app.state} cursor={app.history.cursor} n={len(app.history)}")
        await pilot.pause(0.01)


async def typed(pilot, text: str, holds: str | None = None) -> None:
    """`text` typed into the focused input as fast typing comes (burst.py: every key in the
    queue at once), then waited on until the input holds it (or `holds`: what was typed before
    and `text`). The pilot's `press` waits for the app to be idle after each key (~50 ms a key
    on a busy machine): a console line paid that for every character."""
    app = pilot.app
    holds = text if holds is None else holds
    burst(app, text)
    await wait_for(pilot, lambda: getattr(app.focused, "value", None) == holds, f"{holds!r} in the focused input")


async def paused_at(pilot, position: int) -> None:
    """Wait until the live model is paused and the app shows firing `position`."""
    app = pilot.app
    await wait_for(pilot, lambda: app.state == "paused" and app.history.cursor == position, f"pause at {position}")


@asynccontextmanager
async def paused_at_start(app: HooktuiApp, size: tuple[int, int] = (80, 24)) -> AsyncIterator:
    """Run `app` under Textual's pilot, headless and without notifications, and wait until
    its live model is paused at firing 0; gives the pilot."""
    async with app.run_test(size=size, notifications=False) as pilot:
        await paused_at(pilot, 0)
        yield pilot


async def step_to(pilot, hook: str, module: str, presses: int = 100) -> None:
    """Press `n` (`presses` times at most) until the live model pauses at the first `hook`
    firing of `module`."""
    app = pilot.app
    for _ in range(presses):
        event = app.current
        if app.state == "paused" and event is not None and (event.hook, event.module) == (hook, module) and app.history.at_latest:
            return
        last = len(app.history)
        await pilot.press("n")
        await wait_for(pilot, lambda last=last: app.state != "running" and len(app.history) > last, "the next pause")
    raise AssertionError(f"never paused at {hook} of {module}")


def run(coro) -> None:
    asyncio.run(coro)
