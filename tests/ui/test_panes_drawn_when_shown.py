"""Panes not on screen are not drawn at a step (lower.py): they are handed the firing and
drawn when shown (a tab switched to, a layout composed again at a new size) or read
(`LowerPanes.pane`). What must hold: a pane shown never shows an earlier firing, not even
for the first paint after its tab is switched to, and a read through `pane` gives the
firing shown.

Each pane's content is read here from the widgets themselves (not through `pane`, which
would bring it up to date), and compared with what the firing on screen gives, worked out
from the firing (app.current) with the formatters the panes use."""

from __future__ import annotations

import pytest
from textual.widgets import Static, TabbedContent

from hooktui.engine.records.format import number
from hooktui.explain import explain
from hooktui.ui.app import HooktuiApp
from hooktui.ui.widgets.autograd import AutogradPane
from hooktui.ui.widgets.explain import ExplainPane
from hooktui.ui.widgets.source_view import SourceView, call_site
from hooktui.ui.widgets.tensors import TensorsPane
from hooktui.ui.widgets.values import ValuesPane
from hooktui.ui.widgets.values_grid import ValuesGrid
from hooktui.ui.widgets.watch import WatchPane
from screen_text import screen_rows
from ui_helpers import recorded, run, wait_for

NARROW, WIDE = (80, 24), (120, 40)


@pytest.fixture(scope="module")
def seed_trace():
    return recorded("seed.py")


def _statements(app, event=None) -> list[str]:
    return [s.text for s in explain(event or app.current, app.history.events, app.info)]


def _values_drawn(app) -> tuple[str, str]:
    """The values pane's tensor name (its title's first word) and first value, as drawn."""
    pane = app.query_one(ValuesPane)
    grid = pane.query_one(ValuesGrid)
    first = str(grid.get_cell_at((0, 1))).strip() if grid.row_count else ""
    return str(pane.query_one("#values-title").render()).split(" ")[0], first


def _values_of(tensor) -> tuple[str, str]:
    return (tensor.name, number(tensor.values[0]) if tensor.values else "") if tensor is not None else ("", "")


# For each pane: (what it shows now, read from the widget; what a firing gives it).
CHECKS = {
    "explain": (lambda app: [s.text for s in app.query_one(ExplainPane).statements], _statements),
    "autograd": (lambda app: str(app.query_one(AutogradPane).query_one("#autograd-head", Static).render()),
                 lambda app, event: app.query_one(AutogradPane)._head(event).plain),
    "source": (lambda app: app.query_one(SourceView)._source, lambda app, event: call_site(event, app.history.events)),
    # The first tensor's (the steps below keep the first row chosen).
    "values": (_values_drawn, lambda app, event: _values_of(event.tensors[0] if event.tensors else None)),
    "tensors": (lambda app: app.query_one(TensorsPane)._event, lambda app, event: event),
}
KEYS = {"tensors": "t", "explain": "x", "values": "v", "autograd": "a", "source": "o"}


def _differing(app, name: str, after: int) -> int:
    """A firing past position `after` (and a few steps in) whose pane `name` differs from
    the one at `after`: a pane left at an earlier firing is caught."""
    _, want = CHECKS[name]
    events = app.history.events
    before = want(app, events[after])
    for position in range(max(after + 1, 3), len(events)):
        if want(app, events[position]) != before:
            return position
    raise AssertionError(f"no firing after {after} changes the {name} pane")


async def _step_to(pilot, position: int) -> None:
    app = pilot.app
    while app.history.cursor < position:
        before = app.history.cursor
        await pilot.press("n")
        await wait_for(pilot, lambda: app.history.cursor > before, "the next firing")
    await pilot.pause()


def _shows_current(app, name: str) -> None:
    shown, want = CHECKS[name]
    # The values: of the tensor the lower panes chose (kept by name from firing to firing).
    wanted = _values_of(app.lower.tensor) if name == "values" else want(app, app.current)
    assert shown(app) == wanted, name


@pytest.mark.parametrize("name, size", [
    ("explain", NARROW), ("values", NARROW), ("autograd", NARROW), ("source", NARROW), ("tensors", NARROW),
    ("autograd", WIDE), ("source", WIDE),
])
def test_a_tab_switched_to_shows_the_firing_on_screen_at_once(seed_trace, name, size):
    app = HooktuiApp(recorded=seed_trace, show_timings=False)

    async def script():
        async with app.run_test(size=size, notifications=False) as pilot:
            await pilot.pause()
            lower = app.lower
            assert lower.wide == (size == WIDE)
            tabs = lower.query_one("#side-tabs" if lower.wide else "#tabs", TabbedContent)
            away = "tab-explain" if lower.wide or name == "tensors" else "tab-tensors"
            tabs.active = away
            await pilot.pause()
            assert name not in lower.visible_panes()
            await _step_to(pilot, _differing(app, name, app.history.cursor))
            # Switched to, no pause: what the pane's first paint will draw.
            tabs.active = f"tab-{name}"
            _shows_current(app, name)
            # Away again, steps, and back by the pane's key: on the screen.
            tabs.active = away
            await pilot.pause()
            await _step_to(pilot, _differing(app, name, app.history.cursor))
            await pilot.press(KEYS[name])
            await wait_for(pilot, lambda: name in lower.visible_panes(), f"the {name} pane")
            _shows_current(app, name)

    run(script())


def test_steps_leave_a_hidden_pane_undrawn_and_pane_reads_it_up_to_date(seed_trace):
    app = HooktuiApp(recorded=seed_trace, show_timings=False)

    async def script():
        async with app.run_test(size=NARROW, notifications=False) as pilot:
            await pilot.pause()
            first = [s.text for s in app.query_one(ExplainPane).statements]
            await _step_to(pilot, _differing(app, "explain", 0))
            assert app.lower.visible_panes() == ["tensors"]
            # Not explained at the steps (behind the Tensors tab)...
            assert [s.text for s in app.query_one(ExplainPane).statements] == first
            assert first != _statements(app)
            # ...and explained when read.
            assert [s.text for s in app.lower.pane("explain").statements] == _statements(app)
            head = app.lower.pane("autograd").query_one("#autograd-head", Static)
            assert str(head.render()) == CHECKS["autograd"][1](app, app.current)

    run(script())


def test_a_resize_that_shows_more_panes_shows_the_firing_on_screen(seed_trace):
    app = HooktuiApp(recorded=seed_trace, show_timings=False)

    async def script():
        async with app.run_test(size=NARROW, notifications=False) as pilot:
            await pilot.pause()
            await _step_to(pilot, max(_differing(app, "explain", 0), _differing(app, "values", 0)))
            assert app.lower.visible_panes() == ["tensors"]
            await pilot.resize_terminal(*WIDE)
            await wait_for(pilot, lambda: app.lower.wide and "values" in app.lower.visible_panes(), "the wide layout")
            await pilot.pause()
            for name in ("explain", "values"):
                _shows_current(app, name)
            rows = "\n".join(screen_rows(app))
            assert _statements(app)[0].replace("`", "")[:30] in rows
            # A step with the panes side by side: each one on screen drawn at it.
            await _step_to(pilot, _differing(app, "explain", app.history.cursor))
            for name in ("tensors", "values", "explain"):
                _shows_current(app, name)
            # Back to tabs at a step later, then the Explain tab.
            await pilot.press("n")
            await pilot.resize_terminal(*NARROW)
            # The tabs composed again and settled before the key: once, in a CI run under
            # load, an `x` pressed while they were being composed was lost (not reproduced
            # since; this test is about what the panes draw, not about that window).
            await wait_for(pilot, lambda: not app.lower.wide and app.lower.query("#tabs"), "the narrow layout")
            await pilot.pause()
            await pilot.press("x")
            await wait_for(pilot, lambda: "explain" in app.lower.visible_panes(), "the explain tab")
            _shows_current(app, "explain")
            # The tabs composed again are watched too: a switch shows the firing at once.
            await _step_to(pilot, _differing(app, "tensors", app.history.cursor))
            app.lower.query_one("#tabs", TabbedContent).active = "tab-tensors"
            _shows_current(app, "tensors")

    run(script())


def test_the_watch_tab_shows_the_firing_on_screen_when_switched_to(seed_trace):
    app = HooktuiApp(recorded=seed_trace, show_timings=False)

    async def script():
        async with app.run_test(size=NARROW, notifications=False) as pilot:
            await pilot.pause()
            await pilot.press("W")
            await wait_for(pilot, lambda: app.screen.query("#watch-input"), "the watch prompt")
            app.screen.query_one("#watch-input").value = "event.index"
            await pilot.press("enter")
            await wait_for(pilot, lambda: app.query(WatchPane) and "watch" in app.lower.visible_panes(), "the watch tab")
            tabs = app.lower.query_one("#tabs", TabbedContent)
            tabs.active = "tab-tensors"
            await pilot.pause()
            await _step_to(pilot, 4)
            tabs.active = "tab-watch"
            table = app.query_one(WatchPane).query_one("#watch-table")
            assert str(table.get_row_at(0)[1]) == repr(app.current.index)

    run(script())


@pytest.mark.parametrize("when", ["compose", "mount"])
@pytest.mark.parametrize("name", ["explain", "values"])
def test_a_pane_key_pressed_while_the_panes_are_composed_again_shows_it(seed_trace, name, when):
    """A resize to tabs composes the panes again: the old ones are removed, then the new
    ones composed and mounted, and keys are handled in between. A pane key handled there
    found no pane (NoMatches: the app ended) or was lost (the tabs composed on the old
    choice). Here the key is handled at each of those two points, as the app would."""
    app = HooktuiApp(recorded=seed_trace, show_timings=False)
    handled = []

    async def script():
        async with app.run_test(size=WIDE, notifications=False) as pilot:
            await pilot.pause()
            await _step_to(pilot, _differing(app, name, 0))
            await pilot.press("t")  # the tensors pane chosen: the tabs would start on it
            lower = app.lower
            real = getattr(lower, when if when == "compose" else "mount_all")

            def key_then(*args, **kwargs):
                if not handled:  # the panes' composition of the new layout, once
                    handled.append(app.lower.query(f"#{name}").first() if app.lower.query(f"#{name}") else None)
                    app.action_pane(name)
                return real(*args, **kwargs)

            setattr(lower, when if when == "compose" else "mount_all", key_then)
            await pilot.resize_terminal(*NARROW)
            await wait_for(pilot, lambda: not lower.wide and lower.query("#tabs") and handled, "the narrow layout")
            await pilot.pause()
            assert handled == [None]  # the key came while no pane was there
            await wait_for(pilot, lambda: name in lower.visible_panes(), f"the {name} tab")
            _shows_current(app, name)
            assert app.focused is not None and lower.query_one(f"#{name}") in (app.focused, *app.focused.ancestors)
        assert app.return_code in (None, 0)

    run(script())
