"""The model's own hooks in the app: the Hooks screen, `b` on a hook, the tree mark, and
the user_hook firing of the Stack Overflow user's legacy hook (seed_user_hook.py)."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable

from hooktui.ui.screens.user_hooks import UserHooksScreen
from hooktui.ui.widgets.module_tree import ModuleTree

from ui_helpers import ROOT, paused_at, paused_at_start, run, sample_app, wait_for

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]
HOOK_LINE = next(i for i, line in enumerate((ROOT / "sample_models" / "seed_user_hook.py").read_text().splitlines(), 1) if line.startswith("def printgradnorm"))


@pytest.fixture(autouse=True)
def _repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)


async def _break_on_the_users_hook(pilot) -> None:
    """Open the Hooks screen, break on printgradnorm, continue to where it fires."""
    app = pilot.app
    await paused_at(pilot, 0)
    await pilot.press("H")
    await wait_for(pilot, lambda: isinstance(app.screen, UserHooksScreen), "the hooks screen")
    await pilot.press("b", "escape")
    await wait_for(pilot, lambda: not isinstance(app.screen, UserHooksScreen), "the hooks screen to close")
    await pilot.press("c")
    await wait_for(pilot, lambda: app.state == "paused" and app.current.hook == "user_hook", "the user hook firing")


def test_hooks_screen_lists_the_users_hook_and_b_breaks_where_it_fires():
    async def script():
        app = sample_app("seed_user_hook.py")
        async with paused_at_start(app, size=(120, 40)) as pilot:
            tree = app.query_one(ModuleTree)
            assert str(tree.node_for("fc1").label).endswith("Linear H")
            assert not str(tree.node_for("fc2").label).endswith("H")
            await pilot.press("H")
            await wait_for(pilot, lambda: isinstance(app.screen, UserHooksScreen), "the hooks screen")
            table = app.screen.query_one(DataTable)
            row = [str(cell) for cell in table.get_row_at(0)]
            assert table.row_count == 1
            assert row[1:] == ["printgradnorm", "legacy_backward", "fc1", f"seed_user_hook.py:{HOOK_LINE}", "0"]
            await pilot.press("escape")
            await wait_for(pilot, lambda: not isinstance(app.screen, UserHooksScreen), "the hooks screen to close")
            await pilot.press("H", "b", "escape")
            assert [bp.user_hook for bp in app.source.session.gate.breakpoints] == [0]
            await pilot.press("c")
            await wait_for(pilot, lambda: app.state == "paused" and app.current.hook == "user_hook", "the user hook firing")
            event = app.current
            assert (event.phase, event.module, event.grad_fn) == ("backward", "fc1", "ViewBackward0")
            assert [(t.name, t.shape) for t in event.tensors] == [("grad_input[0]", [1, 5]), ("grad_output[0]", [1, 1, 5])]
            # Paused in it, the Source pane shows the hook's own def line.
            await pilot.press("o")
            await pilot.pause()
            view = app.lower.pane("source")
            assert view._source.lineno == HOOK_LINE and "def printgradnorm" in str(view.render())
            await pilot.press("H")
            await wait_for(pilot, lambda: isinstance(app.screen, UserHooksScreen), "the hooks screen")
            assert str(app.screen.query_one(DataTable).get_row_at(0)[-1]) == "1"
            assert str(app.screen.query_one(DataTable).get_row_at(0)[0]) == "●"
            await pilot.press("escape")
            await pilot.press("c")
            await wait_for(pilot, lambda: app.state == "finished", "the end")

    run(script())


@pytest.mark.parametrize("size", SIZES)
def test_seed_user_hook_firing_with_explain(snap_compare, size):
    async def run_before(pilot):
        await _break_on_the_users_hook(pilot)
        # The Tensors pane keeps the selected name across firings, and which firings `c`
        # drew on its way depends on timing: back to fc1's backward (grad_input[0] only)
        # and forward again selects grad_input[0] whatever was drawn before.
        here = pilot.app.history.cursor
        await pilot.press("N")
        await paused_at(pilot, here - 1)
        await pilot.press("n")
        await paused_at(pilot, here)
        await pilot.press("x")
        # The sample's hook prints: the "model is printing" notice is timed, so not pictured.
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(sample_app("seed_user_hook.py"), terminal_size=size, run_before=run_before)


def test_replayed_trace_lists_the_hooks_that_fired():
    from hooktui.engine.run.loader import load_target
    from hooktui.engine.run.session import record
    from hooktui.ui.app import HooktuiApp

    loaded = load_target(ROOT / "sample_models" / "seed_user_hook.py")
    trace = record(loaded.model, loaded.inputs)

    async def script():
        app = HooktuiApp(recorded=(trace.info, trace.events), show_timings=False)
        async with app.run_test(size=(120, 40), notifications=False) as pilot:
            await pilot.pause()
            assert str(app.query_one(ModuleTree).node_for("fc1").label).endswith("Linear H")
            await pilot.press("H")
            await wait_for(pilot, lambda: isinstance(app.screen, UserHooksScreen), "the hooks screen")
            row = [str(cell) for cell in app.screen.query_one(DataTable).get_row_at(0)]
            assert row[1:3] == ["printgradnorm", "legacy_backward"] and row[-1] == "1"
            await pilot.press("b", "escape")
            assert [bp.user_hook for bp in app.source.breakpoints] == [0]

    run(script())

