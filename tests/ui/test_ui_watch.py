"""Watch expressions in the app (`W`): the Watch pane's values at every firing, checked
against plain PyTorch hooks in the test; removing one; a recorded trace (no live objects);
values that could carry control characters or markup; `R` keeps the watches."""

from __future__ import annotations

import pytest
import torch

from hooktui.engine.run.loader import load_target
from hooktui.engine.run.session import record
from hooktui.ui.app import HooktuiApp
from hooktui.ui.screens.watch import WatchScreen
from hooktui.ui.widgets.watch import WatchPane
from screen_text import screen_rows
from ui_helpers import ROOT, SAMPLES, paused_at, paused_at_start, run, sample_app, step_to, wait_for


def _plain_seed():
    """fc1's output.mean() and grad_output[0].norm() and fc2's weight.abs().max() on the seed
    model, from PyTorch's own hooks (no hooktui)."""
    loaded = load_target(SAMPLES / "seed.py")
    model, seen = loaded.model, {}
    # (Hooks that return None: a value returned would replace the output.)
    model.fc1.register_forward_hook(lambda m, a, out: seen.update(out=out.detach().mean().item()))
    model.fc1.register_full_backward_hook(lambda m, gi, go: seen.update(go=go[0].norm().item()))
    out = model(*loaded.inputs) if isinstance(loaded.inputs, tuple) else model(loaded.inputs)
    (loaded.loss_fn(out) if loaded.loss_fn else out.sum()).backward()
    seen["w"] = model.fc2.weight.detach().abs().max().item()
    return seen


async def add_watch(pilot, expression: str) -> None:
    app = pilot.app
    await pilot.press("W")
    await wait_for(pilot, lambda: isinstance(app.screen, WatchScreen), "the watch prompt")
    app.screen.query_one("#watch-input").value = expression
    await pilot.press("enter")
    await wait_for(pilot, lambda: not isinstance(app.screen, WatchScreen) and app.query(WatchPane), "the watch pane")
    await pilot.pause()


def _values(app) -> dict[str, str]:
    return {v.expression: v.text for v in app.lower.pane("watch").values}


def _number(text: str) -> float:
    return float(text.split()[0])


def test_watches_are_evaluated_again_at_every_firing():
    expected = _plain_seed()
    app = sample_app("seed.py")

    async def script():
        async with paused_at_start(app) as pilot:
            for expression in ("output.mean()", "grad_output[0].norm()", "model.fc2.weight.abs().max()", "1/0"):
                await add_watch(pilot, expression)
            assert app.watches == ["output.mean()", "grad_output[0].norm()", "model.fc2.weight.abs().max()", "1/0"]
            assert app.lower.active == "watch"
            await step_to(pilot, "forward", "fc1")
            values = _values(app)
            assert abs(_number(values["output.mean()"]) - expected["out"]) < 1e-6
            assert values["grad_output[0].norm()"] == "no grad_output at a forward firing"
            assert abs(_number(values["model.fc2.weight.abs().max()"]) - expected["w"]) < 1e-6
            assert values["1/0"] == "ZeroDivisionError: division by zero"
            await step_to(pilot, "backward", "fc1")
            values = _values(app)
            assert abs(_number(values["grad_output[0].norm()"]) - expected["go"]) < 1e-5
            assert values["output.mean()"] == "no output at a backward firing"
            # Back in the history: a past firing has no live objects, and says so.
            await pilot.press("N")
            await pilot.pause()
            assert "past firing" in str(app.lower.pane("watch").query_one("#watch-note").render())
            assert all(text.startswith(("no ", "ZeroDivisionError", "0.", "-0.")) for text in _values(app).values())
            rows = screen_rows(app)
            assert any("1/0" in row and "ZeroDivisionError: division by zero" in row for row in rows), rows

    run(script())


def test_d_removes_the_watch_under_the_cursor():
    app = sample_app("seed.py")

    async def script():
        async with paused_at_start(app) as pilot:
            await add_watch(pilot, "event.hook")
            await add_watch(pilot, "event.module")
            table = app.lower.pane("watch").query_one("#watch-table")
            await wait_for(pilot, lambda: table.has_focus, "the watch table's focus")
            table.move_cursor(row=0)
            await pilot.press("d")
            await pilot.pause()
            assert app.watches == ["event.module"]
            assert list(_values(app)) == ["event.module"]

    run(script())


def test_a_recorded_trace_says_it_has_no_live_objects():
    model = torch.nn.Sequential(torch.nn.Linear(2, 2))
    trace = record(model, torch.ones(1, 2))
    app = HooktuiApp(recorded=(trace.info, trace.events))

    async def script():
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            await pilot.pause()
            await add_watch(pilot, "grad_output[0].norm()")
            await add_watch(pilot, "event.hook")
            values = _values(app)
            assert values["grad_output[0].norm()"] == "no grad_output: a recorded trace has no live objects"
            assert values["event.hook"] == repr(trace.events[0].hook)
            assert "a recorded trace has no live objects" in str(app.lower.pane("watch").query_one("#watch-note").render())

    run(script())


def test_a_value_never_reaches_the_terminal_as_control_characters_or_markup():
    app = sample_app("seed.py")
    evil = "type('X', (), {'__repr__': lambda s: 'a\\x1b]0;owned\\x07[bold red]b[/]'})()"

    async def script():
        async with paused_at_start(app, size=(120, 40)) as pilot:
            await add_watch(pilot, evil)
            rows = screen_rows(app)
            # Shown as those characters (cut to the pane's width), never obeyed nor read as markup.
            assert any("a\\x1b]0;owned\\x07[bold" in row for row in rows), rows
            assert "\x1b" not in str(app.lower.pane("watch").query_one("#watch-table").get_row_at(0)[1])

    run(script())


def test_R_keeps_the_watches():
    from hooktui.commands.common import load
    from hooktui.commands.open import restartable_app
    from hooktui.commands.options import ModelOptions

    first = restartable_app(load(ModelOptions(str(SAMPLES / "seed.py"))), [], legacy=False)

    async def first_run():
        async with paused_at_start(first) as pilot:
            await add_watch(pilot, "event.hook")
            await pilot.press("R")
            await wait_for(pilot, lambda: not first.is_running, "the app's end")

    run(first_run())
    assert first.source.join(10)
    second = first.restart(first)

    async def second_run():
        async with paused_at_start(second) as pilot:
            await pilot.pause()
            assert second.watches == ["event.hook"]
            assert _values(second) == {"event.hook": repr(second.current.hook)}
            await pilot.press("q")

    run(second_run())


SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]


@pytest.mark.parametrize("size", SIZES)
def test_snapshot_watch_pane_at_fc1_backward(snap_compare, size, monkeypatch):
    """A value, a name this firing lacks, a number from the model, an error: one line each."""
    monkeypatch.chdir(ROOT)  # paths on screen relative to the repository

    async def run_before(pilot):
        await paused_at(pilot, 0)
        for expression in ("grad_output[0].norm()", "output.mean()", "module.weight.abs().max()", "1/0"):
            await add_watch(pilot, expression)
        await step_to(pilot, "backward", "fc1")
        await pilot.pause()

    assert snap_compare(sample_app("seed.py"), terminal_size=size, run_before=run_before)
