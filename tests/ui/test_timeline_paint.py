"""The timeline at `n` at the latest firing (issue 33, key to screen): each step grows it by a
row and scrolls it by one. Its scrollbar, whose thumb moves an eighth of a cell every many
rows, is not drawn again when it would draw the same; the timeline keeps the lines it painted
by row and sends only the rows whose contents changed (the two whose highlight moved, the new
one) through Textual's line pipeline. And what they hand back is what a paint from nothing
draws: compared line for line with a render that keeps nothing, after many steps, at three
sizes, after a resize and after the focus leaves the timeline."""

from __future__ import annotations

import torch
from textual.geometry import Region
from textual.scrollbar import ScrollBar
from textual.widget import Widget
from torch import nn

from hooktui.engine.analysis.breakpoints import Breakpoint
from hooktui.engine.run.session import Session
from hooktui.ui.app import HooktuiApp
from hooktui.ui.sources import LiveSource

from ui_helpers import run, wait_for

LAYERS = 600  # 1,200 forward firings when the steps start: a thumb of one cell, moving slowly


def _deep_app() -> HooktuiApp:
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(2, 2) for _ in range(LAYERS)])
    session = Session(model, torch.randn(1, 2), pause=True, label="deep")
    session.add_breakpoint(Breakpoint.on_module(str(LAYERS - 1), phase="forward", hook="forward"))
    return HooktuiApp(LiveSource(session), show_timings=False)


def _drawn(widget) -> list[int]:
    """The lines Textual's line pipeline draws for `widget` from now on (styles, tint,
    filters: its line cache's render_line, called for the lines it does not hold)."""
    drawn: list[int] = []
    cache = widget._styles_cache
    original = cache.render_line
    cache.render_line = lambda styles, y, *args: (drawn.append(y), original(styles, y, *args))[1]
    return drawn


def _from_nothing(widget) -> list[list]:
    """`widget`'s lines painted with nothing kept: its own caches dropped as a change of
    styles drops them (the timeline's strips, styles and painted lines), Textual's line
    cache cleared; the scrollbar through Textual's ScrollBar paint, not its own."""
    widget.notify_style_update()
    widget._styles_cache.clear()
    region = Region(0, 0, *widget.size)
    if isinstance(widget, ScrollBar):
        return [list(line) for line in Widget.render_lines(widget, region)]
    return [list(line) for line in widget.render_lines(region)]


def _as_painted(widget) -> list[list]:
    return [list(line) for line in widget.render_lines(Region(0, 0, *widget.size))]


async def _step(pilot, app) -> None:
    last = len(app.history)
    await pilot.press("n")
    await wait_for(pilot, lambda: app.state == "paused" and len(app.history) > last and app.history.at_latest, "the next pause")
    await pilot.pause()


def test_n_at_the_latest_firing_draws_the_rows_that_changed_and_no_unchanged_scrollbar():
    async def go():
        app = _deep_app()
        async with app.run_test(size=(120, 40), notifications=False) as pilot:
            await wait_for(pilot, lambda: app.state == "paused", "the first pause")
            await pilot.press("c")
            await wait_for(pilot, lambda: app.state == "paused" and len(app.history) > LAYERS, "the breakpoint", timeout=120)
            for _ in range(3):
                await _step(pilot, app)
            timeline = app.timeline
            bar = timeline.vertical_scrollbar
            assert timeline.show_vertical_scrollbar
            rows, bar_drawn = _drawn(timeline), _drawn(bar)
            steps_drawing_the_bar = 0
            for _ in range(12):
                before = len(bar_drawn)
                rows.clear()
                top = round(timeline.scroll_y)
                await _step(pilot, app)
                assert round(timeline.scroll_y) == top + 1  # a scroll by one row, every row moved
                # The rows whose strips changed: the old cursor row, the new one (the header
                # and the rows that only moved are handed back as painted).
                assert len(set(rows)) <= 2, sorted(set(rows))
                steps_drawing_the_bar += len(bar_drawn) > before
            # The thumb (one cell of 15 rows over ~1,200) moves an eighth of a cell every ~10
            # rows: the bar is drawn again at those steps only.
            assert steps_drawing_the_bar <= 3, steps_drawing_the_bar
            assert _as_painted(timeline) == _from_nothing(timeline)
            assert _as_painted(bar) == _from_nothing(bar)

    run(go())


def test_the_timeline_and_its_bar_as_painted_are_what_a_paint_from_nothing_draws():
    async def go():
        app = _deep_app()
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            await wait_for(pilot, lambda: app.state == "paused", "the first pause")
            await pilot.press("c")
            await wait_for(pilot, lambda: app.state == "paused" and len(app.history) > LAYERS, "the breakpoint", timeout=120)
            timeline = app.timeline
            for size in ((80, 24), (120, 40), (200, 60), (97, 31)):
                if size != tuple(app.size):
                    await pilot.resize_terminal(*size)
                    await pilot.pause()
                for _ in range(8):
                    await _step(pilot, app)
                    assert _as_painted(timeline) == _from_nothing(timeline), size
                    assert _as_painted(timeline.vertical_scrollbar) == _from_nothing(timeline.vertical_scrollbar), size
                for key in ("N", "N", "n", "n"):  # back through the history and forward: the cursor row moves
                    await pilot.press(key)
                    await pilot.pause()
                    assert _as_painted(timeline) == _from_nothing(timeline), (size, key)
            # The focus leaves the timeline: its cursor row's colours and its tint change.
            await pilot.press("tab")
            await pilot.pause()
            assert not timeline.has_focus
            await _step(pilot, app)
            assert _as_painted(timeline) == _from_nothing(timeline)
            assert _as_painted(timeline.vertical_scrollbar) == _from_nothing(timeline.vertical_scrollbar)

    run(go())
