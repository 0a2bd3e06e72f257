"""Pilot tests: key presses against the app, assertions on its state."""

from __future__ import annotations

import threading

import pytest

from hooktui.engine.records.records import Event, ModuleInfo, TensorRecord, TensorStats, TraceInfo
from hooktui.engine.run.session import Session
from hooktui.ui.app import HooktuiApp
from hooktui.ui.sources import LiveSource
from hooktui.ui.keys import key_help
from hooktui.ui.screens.error import ErrorScreen
from hooktui.ui.screens.help import HelpScreen
from hooktui.ui.widgets.lower import LowerPanes
from hooktui.ui.widgets.tensors import TensorsPane
from hooktui.ui.widgets.filter_input import FilterInput
from hooktui.ui.widgets.timeline import Timeline
from hooktui.ui.widgets.values import ValuesPane
from hooktui.ui.widgets.values_grid import ValuesGrid

from ui_helpers import paused_at, paused_at_start, recorded, run, sample_app, wait_for
from ui_models import FailsInBackward, FailsInForward, inputs


def summary(event: Event):
    return (event.index, event.phase, event.hook, event.module, event.call, event.grad_fn, [(t.name, t.shape) for t in event.tensors])


def _portable(data):
    """A record without autograd sequence numbers: PyTorch counts them per thread, and the
    app's worker thread is not the one `record()` ran on."""
    if isinstance(data, dict):
        return {k: _portable(v) for k, v in data.items() if k != "seq_nr"}
    if isinstance(data, list):
        return [_portable(v) for v in data]
    return data


@pytest.mark.parametrize("name", ["seed.py", "cnn.py"])
def test_stepping_order_matches_the_engine_record(name):
    _, expected = recorded(name)

    async def script():
        app = sample_app(name)
        async with paused_at_start(app) as pilot:
            seen = [summary(app.current)]
            for position in range(1, len(expected)):
                await pilot.press("n")
                await paused_at(pilot, position)
                seen.append(summary(app.current))
            await pilot.press("n")
            await wait_for(pilot, lambda: app.state == "finished", "the end")
            assert seen == [summary(e) for e in expected]
            assert [_portable(e.to_dict()) for e in app.history.events] == [_portable(e.to_dict()) for e in expected]
            assert app.check_action("step", ()) is None  # greyed out at the end
            assert "forward" in app.summary() and "backward" in app.summary()

    run(script())


def test_step_back_then_forward_walks_history_before_advancing_the_model():
    async def script():
        app = sample_app("seed.py")
        async with paused_at_start(app) as pilot:
            for position in range(1, 5):
                await pilot.press("n")
                await paused_at(pilot, position)
            await pilot.press("N", "p")
            assert app.history.cursor == 2 and len(app.history) == 5
            assert app.query_one(LowerPanes).event is app.history.events[2]
            assert app.query_one(TensorsPane).table.row_count == len(app.history.events[2].tensors)
            await pilot.press("g")
            assert app.history.cursor == 0
            await pilot.press("n", "n", "n", "n")  # back up to the live firing; the model stays put
            assert app.history.cursor == 4 and len(app.history) == 5
            await pilot.press("n")  # only now does the model advance
            await paused_at(pilot, 5)
            assert len(app.history) == 6
            await pilot.press("g", "G")
            assert app.history.cursor == 5

    run(script())


def test_breakpoint_on_fc1_stops_in_forward_and_backward():
    _, expected = recorded("seed.py")

    async def script():
        app = sample_app("seed.py")
        async with paused_at_start(app) as pilot:
            await pilot.press("n")
            await paused_at(pilot, 1)
            assert app.current.module == "fc1"
            await pilot.press("b")  # the current firing's module
            assert {bp.module for bp in app.source.session.gate.breakpoints} == {"fc1"}
            stops = []
            while app.state != "finished":
                await pilot.press("c")
                last = (stops or [1])[-1]

                def stopped(last=last):
                    return app.state == "finished" or (app.state == "paused" and app.history.cursor > last)

                await wait_for(pilot, stopped, "a breakpoint")
                if app.state == "paused":
                    stops.append(app.history.cursor)
            # Positions are not numbers (numbers skip counted legacy firings: engine/records/firing.py).
            assert [app.history.events[i].index for i in stops] == [e.index for e in expected if e.module == "fc1" and e.index > 1]
            assert [app.history.events[i].phase for i in stops][:3] == ["forward", "backward", "backward"]

    run(script())


def test_breakpoint_from_the_tree_selection_and_break_on_backward():
    _, expected = recorded("seed.py")

    async def script():
        app = sample_app("seed.py")
        async with paused_at_start(app) as pilot:
            tree = app.query_one("#tree")
            tree.focus()
            tree.move_cursor(tree.node_for("fc2"))
            await pilot.pause()  # focus() takes effect on the next message loop turn
            assert app.focused is tree
            await pilot.press("b")
            assert {bp.module for bp in app.source.breakpoints} == {"fc2"}
            await pilot.press("b")
            assert not app.source.breakpoints
            await pilot.press("B")
            assert app.source.session.gate.break_on_backward
            await pilot.press("c")
            first_backward = next(e.index for e in expected if e.phase == "backward")
            await paused_at(pilot, first_backward)
            assert app.current.phase == "backward" and app.current.module == ""
            tree.focus()
            await pilot.pause()
            await pilot.press("space")  # steps, even in the tree
            await paused_at(pilot, first_backward + 1)

    run(script())


def test_quit_while_paused_in_backward_ends_app_and_worker():
    _, expected = recorded("cnn.py")
    first_backward = next(e.index for e in expected if e.phase == "backward")
    app = sample_app("cnn.py")
    holder = {}

    async def script():
        async with paused_at_start(app) as pilot:
            await pilot.press("B", "c")
            await paused_at(pilot, first_backward)
            assert app.current.phase == "backward" and app.source.session.gate.paused
            holder["thread"] = app.source.thread
            await pilot.press("q")

    run(script())
    # The app never waits for the model (the terminal comes back first); the model's
    # thread ends on its own at once when told to quit while paused (the waits: safety nets).
    assert app.source.join(60), "the model's worker is still running"
    assert app.source.session.state == "quit"
    thread = holder["thread"]
    thread.join(60)
    assert not thread.is_alive()


@pytest.mark.parametrize("model_cls, phase", [(FailsInForward, "forward"), (FailsInBackward, "backward")])
def test_model_exception_shows_modal_and_app_stays_usable(model_cls, phase):
    async def script():
        app = HooktuiApp(LiveSource(Session(model_cls(), inputs())), show_timings=False)
        async with paused_at_start(app) as pilot:
            await pilot.press("c")
            await wait_for(pilot, lambda: isinstance(app.screen, ErrorScreen), "the error screen")
            assert app.state == "failed"
            error = app.history.events[-1]
            assert error.hook == "error" and error.phase == phase
            assert app.current is error
            await pilot.press("escape")
            assert not isinstance(app.screen, ErrorScreen)
            await pilot.press("g", "n")
            assert app.history.cursor == 1
            await pilot.press("e")
            assert isinstance(app.screen, ErrorScreen)
            await pilot.press("f", "escape", "q")

    run(script())


def test_replay_of_a_recorded_trace_needs_no_model():
    info, events = recorded("seed.py")

    async def script():
        app = HooktuiApp(recorded=(info, events))
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            await pilot.pause()
            assert app.state == "replay" and app.history.cursor == 0 and len(app.history) == len(events)
            await pilot.press("n", "n")
            assert app.history.cursor == 2
            await pilot.press("N")
            assert app.history.cursor == 1
            assert app.current.module == "fc1"
            await pilot.press("b")  # fc1
            fc1 = [e.index for e in events if e.module == "fc1"]
            await pilot.press("c")
            assert app.current.index == fc1[1]
            await pilot.press("c")
            assert app.current.index == fc1[2] and app.current.phase == "backward"
            await pilot.press("b", "B", "g", "c")
            assert app.current.index == next(e.index for e in events if e.phase == "backward")
            await pilot.press("c")
            assert app.history.cursor == len(events) - 1
            assert app.check_action("step", ()) is None
            assert app.summary().endswith("firings, 3 modules")
            await pilot.press("q")

    run(script())


def _synthetic(n: int):
    modules = [ModuleInfo("", "Net"), ModuleInfo("a", "Linear"), ModuleInfo("b", "ReLU")]
    info = TraceInfo(model="Synthetic", modules=modules, loss="none")
    stats = TensorStats(count=4, finite=4, min=0.0, max=1.0, mean=0.5, std=0.5, hist=[1] * 16, hist_range=[0.0, 1.0])
    tensor = TensorRecord(name="output", shape=[2, 2], dtype="float32", device="cpu", stats=stats,
                          values=[0.0, 1.0, 0.5, 0.25], values_shape=[2, 2])
    events = []
    for i in range(n):
        module = "ab"[i % 2]
        phase = "forward" if i < n // 2 else "backward"
        events.append(Event(index=i, phase=phase, hook=phase, module=module, module_type="Linear", call=i // 2, tensors=[tensor]))
    return info, events


def test_timeline_with_100000_recorded_firings():
    info, events = _synthetic(100_000)

    async def script():
        app = HooktuiApp(recorded=(info, events))
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            await pilot.pause()
            timeline = app.query_one(Timeline)
            assert timeline.row_count == 100_000
            await pilot.press("G")
            assert app.history.cursor == 99_999
            await pilot.pause()
            assert timeline.scroll_y > 99_000
            await pilot.press("N", "n", "g")
            assert app.history.cursor == 0 and timeline.scroll_y == 0
            await pilot.press("ampersand", "b")
            assert timeline.row_count == 50_000
            await pilot.press("escape")
            assert timeline.row_count == 100_000

    run(script())


def test_timeline_keys_and_filter():
    info, events = recorded("cnn.py")

    async def script():
        app = HooktuiApp(recorded=(info, events))
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            await pilot.pause()
            timeline = app.query_one(Timeline)
            timeline.focus()
            await pilot.pause()
            await pilot.press("down", "down", "end")
            assert app.history.cursor == len(events) - 1
            await pilot.press("home")
            assert app.history.cursor == 0
            await pilot.press("ampersand", *"head", "enter")
            heads = [i for i, e in enumerate(events) if e.module == "head"]
            assert timeline.row_count == len(heads)
            assert app.focused is timeline
            await pilot.press("down")
            assert app.history.cursor == heads[0]
            await pilot.press("down")
            assert app.history.cursor == heads[1]
            await pilot.press("ampersand", "escape")
            assert timeline.row_count == len(events)

    run(script())


def test_values_pane_moves_through_slices():
    info = TraceInfo(model="Synthetic", modules=[ModuleInfo("", "Net")], loss="none")
    full = TensorRecord(name="args[0]", shape=[2, 3, 4, 5], dtype="float32", device="cpu",
                        values=[float(i) for i in range(120)], values_shape=[2, 3, 4, 5])
    block = TensorRecord(name="output", shape=[4, 100, 100], dtype="float32", device="cpu",
                         values=[float(i) for i in range(128)], values_shape=[2, 8, 8])
    events = [Event(index=0, phase="forward", hook="forward", module="", module_type="Net", call=0, tensors=[full, block])]

    async def script():
        app = HooktuiApp(recorded=(info, events))
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            await pilot.pause()
            await pilot.press("v")
            values = app.lower.pane("values")
            assert values.slices == 6 and values.slice_no == 0
            await pilot.press("right_square_bracket")
            table = values.query_one(ValuesGrid)
            assert values.slice_no == 1 and table.row_count == 4 and table.column_count == 1 + 5
            assert str(table.get_cell_at((0, 1))).strip() == "20"  # [0, 1, 0, 0]
            await pilot.press("right_curly_bracket")  # next index of dim 0: [1, 1]
            assert values.slice_no == 4
            assert str(table.get_cell_at((0, 1))).strip() == "80"
            await pilot.press("left_square_bracket", "left_square_bracket")
            assert values.slice_no == 2
            # The second tensor of the firing: only a leading block was kept.
            app.query_one(TensorsPane).table.move_cursor(row=1)
            await pilot.pause()
            assert values.tensor.name == "output" and values.slice_no == 0 and values.slices == 2
            title = str(values.query_one("#values-title").render())
            assert "showing the first 2×8×8 of (4, 100, 100)" in title

    run(script())


def test_help_screen_and_keymap_and_palette():
    info, events = recorded("seed.py")

    async def script():
        app = HooktuiApp(recorded=(info, events))
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            await pilot.pause()
            await pilot.press("question_mark")
            assert isinstance(app.screen, HelpScreen)
            await pilot.press("escape")
            assert not isinstance(app.screen, HelpScreen)
            await pilot.press("f10")
            assert app.history.cursor == 1
            app.set_keymap({"hooktui.next": "k"})
            await pilot.press("k")
            assert app.history.cursor == 2
            assert any(keys == "k" for keys, _, action in key_help(app) if action == "step")
            titles = [c.title for c in app.get_system_commands(app.screen)]
            assert any(t.startswith("Next firing") for t in titles)
            assert any(t.startswith("Toggle a breakpoint") for t in titles)
            for new in ("Step into", "Finish", "Show or hide the legacy", "Show the explain pane"):
                assert any(t.startswith(new) for t in titles), new
            keys = {action: k for k, _, action in key_help(app)}
            assert keys["step_into"] == "s, F11" and keys["pane('source')"] == "o" and keys["pane('explain')"] == "x"
            assert keys["finish"] == "f" and keys["jump"] == "j" and keys["legacy"] == "L"

    run(script())


def test_layout_switches_with_the_terminal_size():
    info, events = recorded("cnn.py")

    async def script():
        app = HooktuiApp(recorded=(info, events))
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            await pilot.pause()
            app.goto(25)
            lower = app.query_one(LowerPanes)
            assert not lower.wide and lower.visible_panes() == ["tensors"]
            await pilot.resize_terminal(120, 40)
            await wait_for(pilot, lambda: lower.wide and app.query(ValuesPane), "the wide layout")
            await pilot.pause()
            assert set(lower.visible_panes()) == {"tensors", "values", "explain"}
            assert app.query_one(TensorsPane).table.row_count == 1
            await pilot.resize_terminal(80, 24)
            await wait_for(pilot, lambda: not lower.wide, "the narrow layout")
            await pilot.pause()
            assert lower.visible_panes() == ["tensors"]

    run(script())


def test_continue_streams_to_the_end():
    _, expected = recorded("cnn.py")
    phases = {p: sum(e.phase == p for e in expected) for p in ("forward", "backward")}

    async def script():
        app = sample_app("cnn.py")
        async with paused_at_start(app) as pilot:
            await pilot.press("c")
            await wait_for(pilot, lambda: app.state == "finished", "the end")
            n = len(expected)
            assert len(app.history) == n and app.history.cursor == n - 1
            assert app.summary() == f"{phases['forward']} forward + {phases['backward']} backward firings, 11 modules"
            assert app.query_one(Timeline).row_count == n

    run(script())


def test_ui_package_never_imports_torch():
    from pathlib import Path

    import hooktui.ui

    root = Path(hooktui.ui.__file__).parent
    offenders = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if any(line.strip().startswith(("import torch", "from torch")) for line in path.read_text().splitlines())
    ]
    assert offenders == []
    assert threading.active_count() >= 1


def test_a_resize_keeps_the_current_firing_in_view():
    """120x40 at firing 43, then 100x30: the timeline's rows must still hold ▶43 (they
    showed rows 24-38 before: it came back only at the next step)."""
    info, events = recorded("cnn.py")

    async def script():
        app = HooktuiApp(recorded=(info, events))
        async with app.run_test(size=(120, 40), notifications=False) as pilot:
            await pilot.pause()
            position = min(43, len(events) - 1)
            app.goto(position)
            await pilot.pause()
            for size in ((100, 30), (80, 24), (120, 40)):
                await pilot.resize_terminal(*size)
                await pilot.pause()
                await pilot.pause()
                timeline = app.timeline
                top = round(timeline.scroll_y)
                shown = timeline.scrollable_content_region.height - 1  # less the header row
                row = timeline.row_of(position)
                assert top <= row < top + shown, (size, top, shown, row)

    run(script())


def test_z_zooms_the_focused_pane_and_escape_clears_the_filter_from_anywhere():
    info, events = recorded("cnn.py")

    async def script():
        app = HooktuiApp(recorded=(info, events))
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            await pilot.pause()
            await pilot.press("v")
            await pilot.pause()
            await pilot.press("z")
            await pilot.pause()
            zoomed = app.screen.maximized
            assert isinstance(zoomed, ValuesPane) and zoomed.size.width == 80
            assert zoomed.size.height >= 20  # the whole screen less the status and footer lines
            await pilot.press("escape")
            assert app.screen.maximized is None
            app.timeline.focus()
            await pilot.press("z")
            assert app.screen.maximized is app.timeline
            await pilot.press("z")
            assert app.screen.maximized is None
            app.query_one("#tree").focus()  # the tree, a 30% column, zooms to the whole width
            await pilot.press("z")
            await pilot.pause()
            assert app.screen.maximized is app.query_one("#tree") and app.screen.maximized.size.width >= 79
            await pilot.press("z")
            # The filter: set, focus moved away, escape still clears it.
            await pilot.press("ampersand", *"head", "enter")
            assert app.timeline.row_count < len(events)
            await pilot.press("t")
            await pilot.pause()
            assert not isinstance(app.focused, FilterInput)
            await pilot.press("escape")
            assert app.timeline.row_count == len(events)

    run(script())
