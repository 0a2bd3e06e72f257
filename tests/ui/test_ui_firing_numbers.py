"""Issue 25.9: a firing has the same number whether or not the user stepped into autograd
nodes (`s`). The node firings that `s` adds take sub-numbers (#N.1, #N.2 after plain
firing #N) and every other firing keeps the number a plain `record` gives it.

Expected numbers come from a plain `record()` of the same sample (no app, no stepping),
matched to the app's firings by (phase, hook, module, call) and their order among equals."""

from __future__ import annotations

from collections import defaultdict

from hooktui.engine.run.loader import load_target
from hooktui.engine.records.records import Event, position_of
from hooktui.engine.run.session import record

from ui_helpers import SAMPLES, paused_at_start, run, sample_app, step_to, wait_for


def numbered(events: list[Event]) -> dict[tuple, int]:
    """(phase, hook, module, call, k-th such firing) -> index."""
    seen: dict[tuple, int] = defaultdict(int)
    out = {}
    for event in events:
        what = (event.phase, event.hook, event.module, event.call)
        out[(*what, seen[what])] = event.index
        seen[what] += 1
    return out


def test_stepping_into_nodes_leaves_every_plain_firing_its_number():
    loaded = load_target(SAMPLES / "cnn.py")
    plain = record(loaded.model, loaded.inputs, loaded.loss_fn).events
    expected = numbered(plain)
    assert not any(e.sub for e in plain)
    # Legacy firings are counted even where they are not recorded (engine/records/firing.py): the
    # plain numbers are those of a record with them, which leaves no number out.
    with_legacy = record(loaded.model, loaded.inputs, loaded.loss_fn, legacy=True).events
    assert [e.index for e in with_legacy] == list(range(len(with_legacy)))
    assert [(e.index, e.hook, e.module) for e in with_legacy if e.hook != "legacy_backward"] == [
        (e.index, e.hook, e.module) for e in plain]

    async def script():
        app = sample_app("cnn.py")
        async with paused_at_start(app, size=(100, 30)) as pilot:
            for module in ("head", "features.5"):  # `s` at the head, as the issue did, then deeper
                await step_to(pilot, "backward_pre", module, presses=200)
                at = app.current
                last = len(app.history)
                await pilot.press("s")
                await wait_for(pilot, lambda last=last: app.state != "running" and len(app.history) > last, "the first node firing")
                inside = app.current
                assert (inside.hook, inside.module) == ("node_pre", module) or inside.hook == "node"
                assert inside.sub >= 1 and inside.index >= at.index
            await pilot.press("c")
            await wait_for(pilot, lambda: app.state == "finished", "the end of the run")
            events = list(app.history.events)
            stepped = [e for e in events if e.sub]
            # `s` did add firings: node firings only, numbered after a plain one.
            assert stepped and {e.hook for e in stepped} <= {"node_pre", "node"}
            assert {e.module for e in stepped} == {"head", "features.5"}
            assert numbered([e for e in events if not e.sub]) == expected
            # The numbers are in firing order, and each N.k is found again by its number.
            assert [e.key for e in events] == sorted(e.key for e in events)
            for position, event in enumerate(events):
                assert position_of(events, event.index, event.sub) == position
            # The timeline prints them as N.k, the go-to key reaches them.
            first = stepped[0]
            app.go_to_index(first.key)
            await pilot.pause()
            assert app.history.current is first
            assert f"#{first.index}.{first.sub}" in str(app.status_line.render())

    run(script())
