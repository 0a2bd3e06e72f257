"""The module tree's marks stay right when only the changed ones are redrawn: after every
move (steps, back, first, latest, breakpoints toggled, a run with c), each module's marks
equal the ones computed here from the history alone."""

from __future__ import annotations

from hooktui.ui.widgets.module_tree import ModuleTree

from ui_helpers import paused_at_start, run, sample_app, wait_for


def expected_marks(app) -> dict[str, tuple[bool, bool, bool]]:
    event = app.history.current
    shown = app.history.events[: app.history.cursor + 1]
    breakpoints = {bp.module for bp in app.source.breakpoints if bp.kind == "module"}
    out = {}
    for module in app.module_tree._module_nodes:
        visited = event is not None and any(e.module == module and e.phase == event.phase for e in shown)
        out[module] = (event is not None and module == event.module, module in breakpoints, visited)
    return out


def drawn_marks(tree: ModuleTree) -> dict[str, tuple[bool, bool, bool]]:
    return {module: tree._marks.get(module, (False, False, False)) for module in tree._module_nodes}


def test_tree_marks_match_the_history_after_many_moves():
    async def go():
        app = sample_app("seed.py")
        async with paused_at_start(app, size=(120, 40)) as pilot:
            tree = app.module_tree
            checked = 0

            async def check():
                nonlocal checked
                await pilot.pause()
                assert drawn_marks(tree) == expected_marks(app), f"at position {app.history.cursor}"
                checked += 1

            for _ in range(6):
                await pilot.press("n")
                await wait_for(pilot, lambda: app.state == "paused" and not app._stepping, "a step")
                await check()
            for keys in (["N"] * 5, ["g"], ["G"], ["b"], ["N", "N"], ["b"], ["n", "n", "n"]):
                await pilot.press(*keys)
                await check()
            await pilot.press("B", "c")  # run on to backward (a phase change)
            await wait_for(pilot, lambda: app.state == "paused" and app.history.current.phase == "backward", "backward")
            await check()
            for keys in (["n"] * 4, ["N"] * 2, ["g"], ["G"]):
                for key in keys:
                    await pilot.press(key)
                    await wait_for(pilot, lambda: app.state == "paused" and not app._stepping, "a step")
                    await check()
            assert checked > 20

    run(go())
