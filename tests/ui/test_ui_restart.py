"""`R`, pdb's restart: after the run (or in the middle of it) the model runs again from its
first firing in a new app, with the breakpoints (and their on/off) and the break at backward
the last app had, on the model as it was before the first run (restored: the same firings)."""

from hooktui.commands.common import load
from hooktui.commands.open import restartable_app
from hooktui.commands.options import ModelOptions
from hooktui.engine.analysis.breakpoints import parse_breakpoint
from ui_helpers import SAMPLES, paused_at_start, run, wait_for


def _loaded():
    return load(ModelOptions(str(SAMPLES / "seed.py")))


def test_R_runs_the_model_again_with_the_breakpoints_kept():
    loaded = _loaded()
    before = {name: p.detach().clone() for name, p in loaded.model.named_parameters()}
    first = restartable_app(loaded, [parse_breakpoint("module fc1 backward")], legacy=False)
    seen = {}

    async def first_run():
        async with paused_at_start(first) as pilot:
            await pilot.press("K", "a", *"module fc2 forward", "enter", "escape")
            await pilot.press("B")  # the break at backward: kept too
            await pilot.press("c")
            await wait_for(pilot, lambda: first.state == "paused" and first.history.cursor > 0, "the first stop")
            seen["stop"] = (first.current.number, first.current.module, first.current.hook)
            seen["states"] = [(s.breakpoint, s.enabled) for s in first.source.breakpoint_list.states()]
            await pilot.press("R")
            await wait_for(pilot, lambda: not first.is_running, "the app's end")

    run(first_run())
    assert first.restart_requested and first.source.join(60)
    second = first.restart(first)
    assert second is not first and second.history is not first.history

    async def second_run():
        async with paused_at_start(second) as pilot:
            assert len(second.history) == 1 and second.current.index == 0  # from the first firing
            assert [(s.breakpoint, s.enabled) for s in second.source.breakpoint_list.states()] == seen["states"]
            assert second.source.break_on_backward
            await pilot.press("c")
            await wait_for(pilot, lambda: second.state == "paused" and second.history.cursor > 0, "the first stop")
            assert (second.current.number, second.current.module, second.current.hook) == seen["stop"]
            await pilot.press("q")

    run(second_run())
    after = dict(loaded.model.named_parameters())
    assert all(after[name].equal(value) and after[name].grad is None for name, value in before.items())


def test_R_in_a_recorded_trace_says_why_not():
    from hooktui.engine.run.session import record
    from hooktui.ui.app import HooktuiApp

    loaded = _loaded()
    trace = record(loaded.model, loaded.inputs, loaded.loss_fn)
    app = HooktuiApp(recorded=(trace.info, trace.events))

    async def script():
        async with app.run_test(notifications=False) as pilot:
            await pilot.pause()
            await pilot.press("R")
            assert not app.restart_requested and app.is_running
            assert any("R restarts `hooktui MODEL.py` only" in str(n.message) for n in app._notifications)

    run(script())


def test_R_lets_the_first_run_s_final_grad_go_before_the_next_backward():
    """The session keeps the run's final .grad for the console (`grads`); the next run's
    backward makes new ones. A model with billions of parameters must not hold both: by the
    time the second run's backward starts, the first run's are gone, and so is the app that
    showed them (closed), though the run freezes the collector (engine/capture/collector.py)."""
    import weakref

    loaded = _loaded()
    app = restartable_app(loaded, [], legacy=False)

    async def first_run():
        async with paused_at_start(app) as pilot:
            await pilot.press("c")
            await wait_for(pilot, lambda: app.state == "finished", "the run's end")
            await pilot.press("R")
            await wait_for(pilot, lambda: not app.is_running, "the app's end")

    run(first_run())
    grads = app.source.session.final_grads
    assert set(grads) == {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}
    first_grads = [weakref.ref(grad) for grad in grads.values()]
    first_app = weakref.ref(app)
    del grads
    assert app.restart_requested and app.source.join(60)
    app = app.restart(app)  # as hooktui/ui/process.py does: the first app is let go here
    alive_at_backward = []
    session = app.source.session
    backward_started = session._backward_started

    def noting(depth: int) -> None:
        if depth == 0:
            # The first app too: its history holds the snapshots of its last firings.
            alive_at_backward.append((sum(ref() is not None for ref in first_grads), first_app() is not None))
        backward_started(depth)

    session._backward_started = noting  # read when the run starts (Session.run)

    async def second_run():
        async with paused_at_start(app) as pilot:
            await pilot.press("c")
            await wait_for(pilot, lambda: app.state == "finished", "the run's end")
            assert set(session.final_grads) == {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}  # the console's, as before
            await pilot.press("q")

    run(second_run())
    assert alive_at_backward == [(0, False)]
