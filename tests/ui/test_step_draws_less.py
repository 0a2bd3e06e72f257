"""A step draws only what changed (issue 33, key to screen): the panes repaint the lines whose
contents differ, never the blank lines below them, and a held-down `N` draws once for the
last firing while every key still moves one. And what they leave undrawn is what a whole
repaint would draw: the screen after steps of every kind, at every size, equals the screen
drawn again from scratch."""

from __future__ import annotations

from rich.console import Group
from rich.text import Text
from textual.app import App, ComposeResult

from hooktui.ui.app import HooktuiApp
from hooktui.ui.widgets.tensor_table import TensorTable
from hooktui.ui.widgets.text_view import TextView
from hooktui.ui.widgets.values_grid import ValuesGrid

from burst import burst
from ui_helpers import paused_at_start, recorded, run, sample_app, wait_for


def _drawn_lines(widget) -> list[int]:
    """Record the content lines `widget` renders from now on (the Line API's render_line)."""
    drawn: list[int] = []
    original = widget.render_line
    widget.render_line = lambda y: (drawn.append(y), original(y))[1]
    return drawn


def _sent_lines(app) -> list[int]:
    """Record the screen lines each update sends to the terminal from now on (the spans of
    Textual's partial updates; a full update sends every line)."""
    sent: list[int] = []
    compositor = app.screen._compositor
    original = compositor.render_update

    def render_update(*args, **kwargs):
        update = original(*args, **kwargs)
        spans = getattr(update, "spans", None)
        sent.extend(range(app.size.height) if update is not None and spans is None else [y for y, _, _ in spans or ()])
        return update

    compositor.render_update = render_update
    return sent


def _screen(app) -> list:
    return [list(strip) for strip in app.screen._compositor.render_strips()]


async def _whole_repaint(app, pilot) -> list:
    for widget in app.screen.walk_children():
        widget.refresh()
    await pilot.pause()
    await pilot.pause()
    return _screen(app)


class One(App):
    CSS = "TextView { height: 12; } ValuesGrid { height: 12; } TensorTable { height: 10; }"

    def __init__(self, widget) -> None:
        super().__init__()
        self.widget = widget

    def compose(self) -> ComposeResult:
        yield self.widget


def _text(lines: list[str]) -> Group:
    return Group(Text("\n".join(lines)))


def test_the_text_view_repaints_the_lines_that_changed_only():
    async def go():
        view = TextView()
        app = One(view)
        async with app.run_test(size=(60, 14)) as pilot:
            view.set_renderable(_text(["first line", "second line", "third line"]))
            await pilot.pause()
            drawn = _drawn_lines(view)
            view.set_renderable(_text(["first line", "SECOND line", "third line"]))
            await pilot.pause()
            assert sorted(set(drawn)) == [1]
            drawn.clear()
            view.set_renderable(_text(["first line"]))  # shorter: the lines it no longer has, not the blank ones below
            await pilot.pause()
            assert sorted(set(drawn)) == [1, 2]
            fresh = _screen(app)
            assert fresh == await _whole_repaint(app, pilot)

    run(go())


def _cells(seed: int, rows: int, columns: int) -> list[list[Text]]:
    return [[Text(f"{seed if (r, c) == (1, 2) else r * columns + c}", justify="right") for c in range(columns)] for r in range(rows)]


def test_the_values_grid_repaints_the_rows_that_changed_never_the_blank_lines_below():
    async def go():
        grid = ValuesGrid()
        app = One(grid)
        async with app.run_test(size=(60, 14)) as pilot:
            grid.fill(_cells(100, 4, 5))
            await pilot.pause()
            drawn = _drawn_lines(grid)
            grid.fill(_cells(200, 4, 5))  # one cell changed: its row (line 2, under the header)
            await pilot.pause()
            assert sorted(set(drawn)) == [2]
            drawn.clear()
            grid.fill(_cells(3, 2, 7))  # other columns: the header and the rows drawn before or now
            await pilot.pause()
            assert sorted(set(drawn)) == [0, 1, 2, 3, 4]
            assert _screen(app) == await _whole_repaint(app, pilot)

    run(go())


def test_the_tensors_table_repaints_its_rows_not_the_blank_lines_below():
    def fill(table: TensorTable, rows: list[list[str]], width: int = 8) -> None:
        table.fill([str(c) for c in range(len(rows[0]))], [width] * len(rows[0]), [list(map(Text, row)) for row in rows])

    async def go():
        table = TensorTable()
        app = One(table)
        async with app.run_test(size=(60, 14)) as pilot:
            fill(table, [["a", "b"], ["c", "d"], ["e", "f"]])
            await pilot.pause()
            sent = _sent_lines(app)
            fill(table, [["a", "b"], ["c", "D"], ["e", "f"]])  # one cell: its row only (line 2, under the header)
            await pilot.pause()
            assert sorted(set(sent)) == [2]
            sent.clear()
            fill(table, [["x", "y"]], width=9)  # other widths: the header and the three rows it held, not the blank lines
            await pilot.pause()
            await pilot.pause()
            assert sent and max(sent) <= 3, sent
            assert _screen(app) == await _whole_repaint(app, pilot)

    run(go())


def test_every_step_leaves_the_screen_a_whole_repaint_would_draw_at_every_size():
    info, events = recorded("cnn.py")

    async def go(size: tuple[int, int]):
        app = HooktuiApp(recorded=(info, events), show_timings=False)
        async with app.run_test(size=size, notifications=False) as pilot:
            app.goto(len(events) - 1, follow=False)
            await pilot.pause()
            # Back through the backward (firings of every kind and shape), with panes shown in
            # turn (a tab the steps filled while hidden), then forward again.
            for key in ["N"] * 6 + ["x", "N", "N", "t", "N", "v", "N", "n", "t", "N"] + ["n"] * 3:
                await pilot.press(key)
                await pilot.pause()
                assert _screen(app) == await _whole_repaint(app, pilot), (size, key, app.history.cursor)
            await pilot.resize_terminal(size[0] - 7, size[1] - 3)
            await pilot.pause()
            for key in "NNn":
                await pilot.press(key)
                await pilot.pause()
                assert _screen(app) == await _whole_repaint(app, pilot), (size, "resized", key)

    for size in ((80, 24), (120, 40), (200, 60)):
        run(go(size))


def test_a_held_down_N_moves_one_firing_a_key_and_draws_the_last():
    info, events = recorded("cnn.py")

    async def go():
        app = HooktuiApp(recorded=(info, events), show_timings=False)
        async with app.run_test(size=(120, 40), notifications=False) as pilot:
            start = len(events) - 1
            app.goto(start, follow=False)
            await pilot.pause()
            draws = []
            original = app._render_current
            app._render_current = lambda: (draws.append(app.history.cursor), original())[1]
            burst(app, "NNNNNN")  # all in the queue before the first is handled, as a held key's repeats
            await wait_for(pilot, lambda: app.history.cursor == start - 6, "six firings back")
            await pilot.pause()
            assert app.history.cursor == start - 6
            assert draws and draws[-1] == start - 6 and len(draws) < 6, draws
            assert app.timeline._shown == start - 6  # the panes show where the cursor is
            assert app.lower.event is events[start - 6]

    run(go())


def test_a_held_down_n_at_a_live_pause_steps_once_a_key_and_draws_where_it_stops():
    async def go():
        app = sample_app("cnn.py")
        async with paused_at_start(app, size=(120, 40)) as pilot:
            draws = []
            original = app._render_current
            app._render_current = lambda: (draws.append(app.history.cursor), original())[1]
            burst(app, "nnnn")  # the model steps at the first; the other three wait their turn
            await wait_for(pilot, lambda: app.state == "paused" and app.history.cursor == 4 and not app._stepping,
                           "four steps")
            await pilot.pause()
            assert len(app.history) == 5 and app.history.cursor == 4  # one firing a key, no more
            assert draws and draws[-1] == 4 and len(draws) < 4, draws
            assert app.lower.event is app.history.events[4]

    run(go())
