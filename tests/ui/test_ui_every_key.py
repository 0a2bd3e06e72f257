"""Every key the help lists, pressed on a live model that goes NaN (nan_hunt.py), in an
order that reaches backward, the first NaN and the end: the app stays up and shows the
statistics of the firing it is on. `make test` runs it through HOOKTUI_DEVICE_PATH=1 too,
where every pane reads summaries taken as on a GPU."""

import math

from textual.screen import ModalScreen
from textual.widgets import Input

from hooktui.ui.keys import key_help
from ui_helpers import paused_at_start, run, sample_app, wait_for

# Keys pressed first, in this order (the rest of the help follows): step, step into,
# finish, back, a module breakpoint, the backward break, then the NaN break and continue.
FIRST = ["step", "step_into", "finish", "back", "breakpoint", "break_backward", "resume", "break_nonfinite", "resume"]
LAST = ["resume", "show_error", "quit"]


def test_every_key_in_the_help_on_a_live_model_that_goes_nan():
    app = sample_app("nan_hunt.py")
    pressed, nonfinite = [], []

    async def script():
        async with paused_at_start(app, size=(120, 40)) as pilot:
            listed = [action for _, _, action in key_help(app)]
            keys = _first_keys(app)
            assert set(FIRST + LAST) <= set(listed) <= set(keys), sorted(listed)
            middle = [a for a in listed if a not in FIRST and a not in LAST]
            for action in FIRST + middle + LAST[:-1]:
                await pilot.press(keys[action])
                pressed.append(action)
                await pilot.pause()
                if action == "resume":  # to a breakpoint or the end
                    await wait_for(pilot, lambda: app.state in ("paused", "finished"), "the run to stop")
                while isinstance(app.screen, ModalScreen) or isinstance(app.focused, Input):
                    await pilot.press("escape")  # close what the key opened
                    await pilot.pause()
                nonfinite.append(_check_current_stats(app))
            for _ in range(100):  # past the breakpoints set above, to the end
                if app.state == "finished":
                    break
                await pilot.press(keys["resume"])
                await wait_for(pilot, lambda: app.state in ("paused", "finished"), "the run to stop")
                nonfinite.append(_check_current_stats(app))
            assert app.state == "finished"
            await pilot.press(keys["quit"])

    run(script())
    assert set(pressed) | {"quit"} == {action for _, _, action in key_help(app)}
    assert any(nonfinite), "the NaN break stopped nowhere"


def _first_keys(app) -> dict[str, str]:
    """action -> the first key bound to it."""
    keys: dict[str, str] = {}
    for key, bindings in app._bindings.key_to_bindings.items():
        for binding in bindings:
            keys.setdefault(binding.action, key)
    return keys


def _check_current_stats(app) -> bool:
    """The firing shown has its statistics, consistent with its exact non-finite counts;
    True when one of its tensors holds a NaN or an Inf."""
    event = app.current
    if event is None:
        return False
    found = False
    for tensor in event.tensors:
        if tensor.is_missing or tensor.shape is None or tensor.note:
            continue
        stats = tensor.stats
        nan, posinf, neginf = tensor.nonfinite_counts
        assert (stats.nan, stats.posinf, stats.neginf) == (nan, posinf, neginf)
        assert stats.count == math.prod(tensor.shape)
        assert stats.finite == stats.count - nan - posinf - neginf
        found = found or bool(nan or posinf or neginf)
    return found
