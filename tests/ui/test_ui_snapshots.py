"""Snapshot tests at 80x24 (tabs) and 120x40 (panes side by side).

Deterministic by construction: seeded sample models, no timings on screen
(`show_timings=False`), no animations (tests/conftest.py), and every `run_before` waits
until the model's worker has paused where the picture is taken. Paths on screen are
relative to the working directory, so the tests run from the repository root.

Review changed SVGs by eye before accepting them (`--snapshot-update`).
"""

from __future__ import annotations

import pytest

from hooktui.engine.run.loader import load_target
from hooktui.engine.run.session import Session, record
from hooktui.ui.app import HooktuiApp
from hooktui.ui.sources import LiveSource
from hooktui.ui.screens.error import ErrorScreen
from hooktui.ui.screens.help import HelpScreen
from hooktui.ui.screens.overview import OverviewScreen
from hooktui.ui.widgets.timeline import Timeline

from ui_helpers import ROOT, SAMPLES, paused_at, sample_app, wait_for
from ui_models import FailsInBackward, inputs

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]


@pytest.fixture(autouse=True)
def _repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)


async def _step_until(pilot, key: str, done) -> None:
    """Press `key` until `done(event)` holds for the firing the model paused in."""
    app = pilot.app
    for _ in range(200):
        if app.state == "paused" and done(app.current):
            return
        last = len(app.history)
        await pilot.press(key)

        def moved(last=last):
            return app.state in ("finished", "failed") or (app.state == "paused" and len(app.history) > last)

        await wait_for(pilot, moved, "the next pause")
    raise AssertionError("never reached the firing")


async def _cnn_at_the_heads_backward(pilot) -> None:
    """From firing 0: `B` (break when backward starts) and `c` to there, then `n` up to the
    head's backward firing."""
    await paused_at(pilot, 0)
    await pilot.press("B", "c")
    pilot.app.clear_notifications()  # B says "on" in a toast: not what the snapshots show
    await _step_until(pilot, "n", lambda e: e.module == "head" and e.hook == "backward")


@pytest.mark.parametrize("size", SIZES)
def test_cnn_first_forward_firing(snap_compare, size):
    async def run_before(pilot):
        await paused_at(pilot, 0)

    assert snap_compare(sample_app("cnn.py"), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_cnn_backward_firing_with_autograd_pane(snap_compare, size):
    async def run_before(pilot):
        await _cnn_at_the_heads_backward(pilot)
        await pilot.press("a")
        await pilot.pause()

    assert snap_compare(sample_app("cnn.py"), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_seed_paused_in_fc1_backward(snap_compare, size):
    async def run_before(pilot):
        await paused_at(pilot, 0)
        await pilot.press("n")
        await paused_at(pilot, 1)
        await pilot.press("b")  # breakpoint on fc1, the current firing's module
        await _step_until(pilot, "c", lambda e: e.module == "fc1" and e.hook == "backward")

    assert snap_compare(sample_app("seed.py"), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_exception_modal(snap_compare, size):
    app = HooktuiApp(LiveSource(Session(FailsInBackward(), inputs())), show_timings=False)

    async def run_before(pilot):
        await paused_at(pilot, 0)
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ErrorScreen), "the error screen")
        # The timeline behind the modal catches up with the last firings (its scrollbar
        # too) frames later, later still on a loaded machine: settle, then repaint it.
        await wait_for(pilot, lambda: pilot.app.state == "failed", "the run to end")
        timeline = pilot.app.screen_stack[0].query_one(Timeline)
        await wait_for(pilot, lambda: timeline.scroll_y == timeline.max_scroll_y, "the timeline at its end")
        await pilot.wait_for_scheduled_animations()
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_help_screen(snap_compare, size):
    async def run_before(pilot):
        await paused_at(pilot, 0)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, HelpScreen), "the help screen")

    assert snap_compare(sample_app("cnn.py"), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_seed_explain_fc1_backward(snap_compare, size):
    async def run_before(pilot):
        await paused_at(pilot, 0)
        await _step_until(pilot, "n", lambda e: e.module == "fc1" and e.hook == "backward")
        await pilot.press("x")
        await pilot.pause()

    assert snap_compare(sample_app("seed.py"), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_seed_legacy_side_by_side_fc1(snap_compare, size):
    async def run_before(pilot):
        await paused_at(pilot, 0)
        await _step_until(pilot, "n", lambda e: e.module == "fc1" and e.hook == "legacy_backward")
        await pilot.press("x")
        await pilot.pause()

    assert snap_compare(sample_app("seed.py", legacy=True), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_overview_cnn_during_backward(snap_compare, size):
    """Every call's output; the gradients so far (backward has reached the head), ▶ there."""

    async def run_before(pilot):
        await _cnn_at_the_heads_backward(pilot)
        await pilot.press("w")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, OverviewScreen), "the overview")
        await pilot.pause()

    assert snap_compare(sample_app("cnn.py"), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_overview_nan_at_the_last_firing(snap_compare, size):
    """NaN! and Inf! rows, in the cells where they are: sqrt's grad_input, then upstream.
    On a recorded run of nan.py (the live overview is test_overview_cnn_during_backward's)."""
    loaded = load_target(SAMPLES / "nan.py")
    trace = record(loaded.model, loaded.inputs, loaded.loss_fn)
    app = HooktuiApp(recorded=(trace.info, trace.events), show_timings=False)

    async def run_before(pilot):
        await pilot.press("G", "w")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, OverviewScreen), "the overview")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)
