"""Pilot tests for issue 4's keys: step into autograd nodes (s), finish (f), the legacy
view (L), forward <-> backward (j) and the explain pane (x). Expected values come from
the engine's own records (`record()`) and from hooktui.explain, never typed in."""

from __future__ import annotations

import io

from rich.console import Console

from hooktui.engine.records.records import position_of
from hooktui.explain import explain
from hooktui.ui.app import HooktuiApp
from hooktui.ui.widgets.lower import LowerPanes
from hooktui.ui.widgets.timeline import Timeline

from ui_helpers import paused_at_start, recorded, run, sample_app, step_to, wait_for


def timeline_hooks(app: HooktuiApp) -> list[str]:
    timeline = app.query_one(Timeline)
    return [app.history.events[timeline.position_at(row)].hook for row in range(timeline.row_count)]


def test_step_into_shows_node_firings_and_finish_reaches_the_backward():
    async def script():
        app = sample_app("seed.py")
        async with paused_at_start(app) as pilot:
            # fc1: `s` at its backward_pre, then `n`: node firings of fc1, in the engine's order.
            await step_to(pilot, "backward_pre", "fc1")
            start = app.history.cursor
            await pilot.press("f11")  # F11, as in VS Code: `s`
            await wait_for(pilot, lambda: app.state == "paused" and len(app.history) > start + 1, "the first firing inside")
            while app.state == "paused":
                last = len(app.history)
                await pilot.press("n")
                await wait_for(pilot, lambda last=last: app.state != "running" and len(app.history) > last or app.state == "finished", "a pause")
            inside = [e for e in app.history.events[start + 1 :] if e.hook in ("node_pre", "node")]
            assert inside and {e.module for e in inside} == {"fc1"}
            assert {e.call for e in inside} == {app.history.events[start].call}
            names = [e.grad_fn for e in inside if e.hook == "node"]
            assert names == [e.grad_fn for e in app.source.session.events if e.hook == "node"]  # what the engine recorded
            assert all(e.grad_fn for e in inside)

    run(script())


def test_finish_runs_to_the_call_backward_live_and_in_replay():
    info, events = recorded("seed.py")
    # fc2's backward comes after its nodes (its input requires grad); fc1's fires early.
    fc2_backward = next(e for e in events if (e.hook, e.module) == ("backward", "fc2"))

    async def live():
        app = sample_app("seed.py")
        async with paused_at_start(app) as pilot:
            await step_to(pilot, "backward_pre", "fc2")
            start = len(app.history)
            await pilot.press("s")
            await wait_for(pilot, lambda: app.state == "paused" and len(app.history) > start, "the first firing inside")
            assert app.current.module == "fc2" and app.current.hook in ("node_pre", "node", "param_grad")
            await pilot.press("f")
            await wait_for(pilot, lambda: app.state == "paused" and app.current.hook == "backward", "fc2's backward")
            assert (app.current.module, app.current.call) == ("fc2", fc2_backward.call)
            assert [t.shape for t in app.current.tensors] == [t.shape for t in fc2_backward.tensors]

    async def replay():
        app = HooktuiApp(recorded=(info, events))
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            await pilot.pause()
            pre = position_of(events, next(e.index for e in events if (e.hook, e.module) == ("backward_pre", "fc2")))
            app.goto(pre)
            await pilot.press("s")  # replay: `s` is `n`
            assert app.history.cursor == pre + 1
            await pilot.press("f")
            assert app.current.index == fc2_backward.index

    run(live())
    run(replay())


def test_legacy_toggle_shows_and_hides_legacy_firings():
    _, expected = recorded("seed.py", legacy=True)
    n_legacy = sum(e.hook == "legacy_backward" for e in expected)
    assert n_legacy > 0

    async def script():
        app = sample_app("seed.py", legacy=False)
        async with paused_at_start(app) as pilot:
            assert not app.legacy_shown and "legacy_backward" in app.source.session.gate.skip_hooks
            await pilot.press("c")
            await wait_for(pilot, lambda: app.state == "finished", "the end")
            assert len(app.history) == len(expected)
            assert timeline_hooks(app).count("legacy_backward") == 0
            assert app.current.hook != "legacy_backward"
            await pilot.press("L")
            assert app.legacy_shown and "legacy_backward" not in app.source.session.gate.skip_hooks
            assert timeline_hooks(app).count("legacy_backward") == n_legacy
            await pilot.press("L")
            assert timeline_hooks(app).count("legacy_backward") == 0
            # Moving through the history skips hidden firings.
            await pilot.press("g")
            seen = []
            while not app.history.at_latest:
                await pilot.press("n")
                seen.append(app.current.hook)
            assert "legacy_backward" not in seen

    run(script())


def test_legacy_flag_pauses_at_legacy_firings():
    async def script():
        app = sample_app("seed.py", legacy=True)
        async with paused_at_start(app) as pilot:
            assert app.legacy_shown
            await step_to(pilot, "legacy_backward", "fc1")
            explain_pane = app.lower.pane("explain")  # drawn first if behind another tab
            assert explain_pane.statements[-1].ok is False  # the verdict: grad_input ≠ module inputs
            await pilot.press("L")  # hidden while paused at one: the cursor leaves it
            assert app.current.hook != "legacy_backward"
            assert "legacy_backward" in app.source.session.gate.skip_hooks

    run(script())


def test_jump_from_backward_to_its_forward_and_back():
    info, events = recorded("seed.py")
    backward = next(e for e in events if (e.hook, e.module) == ("backward", "fc2"))

    async def script():
        app = HooktuiApp(recorded=(info, events))
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            await pilot.pause()
            app.goto(position_of(events, backward.index))  # positions are not numbers (engine/records/firing.py)
            await pilot.press("j")
            assert app.current.index == backward.forward_index
            assert app.current.hook == "forward" and app.current.module == "fc2"
            await pilot.press("j")
            assert app.current.index == backward.index
            pre = next(e for e in events if (e.hook, e.module) == ("backward_pre", "fc2"))
            app.goto(position_of(events, pre.index))
            await pilot.press("j")  # a fresh jump, from the same call's backward_pre
            assert app.current.index == pre.forward_index == backward.forward_index
            await pilot.press("N", "j")  # moved away: `j` does not return any more
            assert app.history.cursor == position_of(events, backward.forward_index) - 1

    run(script())


def test_explain_pane_says_what_explain_returns_and_follows_new_firings():
    async def script():
        app = sample_app("seed.py")
        async with paused_at_start(app) as pilot:
            await step_to(pilot, "backward", "fc1")
            await pilot.press("x")
            lower = app.query_one(LowerPanes)
            await wait_for(pilot, lambda: "explain" in lower.visible_panes(), "the explain tab")
            backward = app.current

            def shown() -> str:
                console = Console(width=500, record=True, file=io.StringIO())
                console.print(app.lower.pane("explain").renderable)
                return " ".join(console.export_text().replace("`", "").split())

            def expected() -> list[str]:
                return [" ".join(s.text.replace("`", "").split()) for s in explain(backward, app.history.events, app.info)]

            before = expected()
            assert all(statement in shown() for statement in before)
            # The model goes on while fc1's backward stays on screen: its param_grad firings
            # arrive, and the statements change ("arrives at firing #k").
            app.goto(app.history.cursor, follow=False)
            while app.state == "paused" and not any(e.hook == "param_grad" and e.module == "fc1" for e in app.history.events):
                last = len(app.history)
                app.source.step()
                await wait_for(pilot, lambda last=last: (app.state == "paused" and len(app.history) > last) or app.state == "finished", "a firing")
            await pilot.pause()
            assert app.current is backward
            after = expected()
            assert after != before
            assert all(statement in shown() for statement in after)

    run(script())
