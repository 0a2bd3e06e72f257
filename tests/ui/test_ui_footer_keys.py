"""Stepping back through a backward greys `f` (finish) out and in again at most steps; the
footer then sets its keys' state in place (widgets/keys_footer.py) instead of making
every key again, and each key shows what the screen's bindings say."""

from __future__ import annotations

from textual.widgets._footer import FooterKey

from hooktui.ui.app import HooktuiApp

from ui_helpers import recorded, run, wait_for


def shown_keys(app) -> list[tuple[str, bool]]:
    # The command palette's key (shown apart from the bindings, never disabled here) left out.
    return [(key.action, key.has_class("-disabled")) for key in app.query(FooterKey) if not key.has_class("-command-palette")]


def wanted_keys(app) -> list[tuple[str, bool]]:
    first: dict[str, bool] = {}
    for _, binding, enabled, _ in app.screen.active_bindings.values():
        if binding.show:
            first.setdefault(binding.action, not enabled)
    return list(first.items())


def test_footer_keys_follow_availability_without_being_made_again():
    info, events = recorded("seed.py")

    async def go():
        app = HooktuiApp(recorded=(info, events), show_timings=False)
        async with app.run_test(size=(120, 40), notifications=False) as pilot:
            await wait_for(pilot, lambda: len(app.history) == len(events) and bool(app.query(FooterKey)), "the firings")
            await pilot.press("G")
            await pilot.pause()
            flips = 0
            for _ in range(12):
                before_state = app._bindings_state
                keys_before = list(app.query(FooterKey))
                await pilot.press("N")
                await pilot.pause()
                await pilot.pause()
                assert shown_keys(app) == wanted_keys(app), f"at {app.history.cursor}"
                if app._bindings_state != before_state:
                    flips += 1
                    assert list(app.query(FooterKey)) == keys_before, "the footer made its keys again"
            assert flips >= 2  # the walk did cross changes of availability

    run(go())
