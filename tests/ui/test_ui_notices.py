"""Notices at narrow sizes (issue 32, item 7): at 80x24 the toasts of `B`, `L`, `S` and `#`
covered the stats column for 5 s. While the panes are tabs a notice takes the footer's row
for its time (widgets/notice.py); side by side (120x40) the toasts stay."""

from __future__ import annotations

from textual.widgets import Footer

from hooktui.ui.widgets.lower import LowerPanes
from hooktui.ui.widgets import notice
from hooktui.ui.widgets.notice import NoticeLine
from screen_text import screen_rows
from ui_helpers import ROOT, paused_at, run, sample_app, wait_for


def _toasts_over(app, widget) -> list:
    """The toasts drawn on the main screen over `widget`."""
    region = widget.region
    return [t for t in app.screen_stack[0].query("Toast") if t.display and t.visible and t.region.overlaps(region)]


async def _said(pilot, words: str) -> list[str]:
    """Wait until the notice line says `words`; the screen's rows then."""
    app = pilot.app
    line = app.query_one(NoticeLine)
    await wait_for(pilot, lambda: words in line.text, f"the notice {words!r}")
    await pilot.pause()
    return screen_rows(app)


def test_at_80x24_B_L_S_and_hash_say_it_in_the_footer_row_not_over_the_panes(tmp_path):
    app = sample_app("seed.py", legacy=False)
    saved = tmp_path / "run.jsonl"

    async def script():
        async with app.run_test(size=(80, 24), notifications=True) as pilot:
            await paused_at(pilot, 0)
            lower = app.query_one(LowerPanes)
            stats_rows = screen_rows(app)[lower.region.y + 2:lower.region.bottom]  # below the tab bar (its underline slides)
            cases = [
                (["B"], "breakpoint: break when backward starts: on"),
                (["L"], "legacy: legacy register_backward_hook firings shown"),
                (["number_sign", *"9999", "enter"], "go to: #9999 has not fired yet"),
            ]
            for keys, words in cases:
                await pilot.press(*keys)
                rows = await _said(pilot, words)
                assert rows[-1].strip().startswith(words[:70]), rows[-1]
                assert not any(words[:30] in row for row in rows[:-1]), rows
                assert not app.query_one(Footer).display
                assert not _toasts_over(app, lower)
                assert app._notifications  # still a notice for Textual (its list, the palette's log)
            # The panes under the notices are as they were: nothing drawn over the stats.
            assert screen_rows(app)[lower.region.y + 2:lower.region.bottom] == stats_rows
            await pilot.press("S")
            await pilot.pause()
            app.screen.query_one("#save-input").value = str(saved)
            await pilot.press("enter")
            rows = await _said(pilot, "save: saved ")
            assert rows[-1].strip().startswith("save: saved "), rows[-1]
            assert saved.exists() and not _toasts_over(app, lower)

    run(script())


def test_the_footer_comes_back_after_the_notice_and_markup_is_never_read():
    app = sample_app("seed.py")

    async def script():
        async with app.run_test(size=(80, 24), notifications=True) as pilot:
            await paused_at(pilot, 0)
            app.notify("[bold]x[/] \x1b]0;t\x07", title="t", timeout=60, markup=False)
            rows = await _said(pilot, "t: [bold]x[/] \\x1b]0;t\\x07")
            assert "t: [bold]x[/] \\x1b]0;t\\x07" in rows[-1]
            footer = app.query_one(Footer)
            app.notify("a short one", timeout=0.2)  # the one shown gives way sooner, then this one
            await wait_for(pilot, lambda: footer.display and not app.query_one(NoticeLine).display, "the footer back")

    run(script())


def test_notices_made_together_are_each_said_in_turn(monkeypatch):
    """A debug step's end says "step done" and "run finished" at once: the second must not
    wipe the first before anyone could read it (each is said, in order, then the footer)."""
    monkeypatch.setattr(notice, "QUEUED_WAIT", 0.3)
    app = sample_app("seed.py")
    said: list[str] = []

    async def script():
        async with app.run_test(size=(80, 24), notifications=True) as pilot:
            await paused_at(pilot, 0)
            line = app.query_one(NoticeLine)
            for k in range(3):
                app.notify(f"notice {k}", title="t", timeout=1.0, markup=False)

            def seen() -> bool:
                if line.text and (not said or said[-1] != line.text):
                    said.append(line.text)
                return app.query_one(Footer).display and not line.display

            await wait_for(pilot, lambda: bool(line.text), "the first notice")
            await wait_for(pilot, seen, "every notice, then the footer")

    run(script())
    assert said == ["t: notice 0", "t: notice 1", "t: notice 2"], said


def test_at_120x40_notices_stay_toasts():
    app = sample_app("seed.py")

    async def script():
        async with app.run_test(size=(120, 40), notifications=True) as pilot:
            await paused_at(pilot, 0)
            await pilot.press("B")
            await wait_for(pilot, lambda: app.query("Toast"), "a toast")
            await pilot.pause()
            assert app.query_one(Footer).display and not app.query_one(NoticeLine).display
            assert any("break when backward starts: on" in row for row in screen_rows(app)[:-1])

    run(script())


def test_snapshot_notice_at_80x24(snap_compare, monkeypatch):
    """`B` at 80x24: the notice in the footer's row, the stats column clear."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(notice, "DEFAULT_TIMEOUT", 120.0)  # still there when the picture is taken

    async def run_before(pilot):
        await paused_at(pilot, 0)
        await pilot.press("B")
        await _said(pilot, "breakpoint: break when backward starts: on")

    assert snap_compare(sample_app("seed.py"), terminal_size=(80, 24), run_before=run_before)


def _toasts_on(screen) -> list:
    return [t for t in screen.query("Toast") if t.display and t.visible]


def test_at_80x24_a_notice_while_a_modal_is_open_is_said_on_the_last_row_not_over_it():
    """Help and the console open at 80x24: a notice (the model's, the app's) takes the last
    row over the modal, as the footer's row on the main screen; no toast covers the modal's
    text; the notice goes on for its time on the main screen once the modal is closed."""
    app = sample_app("seed.py")

    async def script():
        async with app.run_test(size=(80, 24), notifications=True) as pilot:
            await paused_at(pilot, 0)
            for key, screen_name in [("question_mark", "HelpScreen"), ("colon", "ConsoleScreen")]:
                await pilot.press(key)
                await wait_for(pilot, lambda: type(app.screen).__name__ == screen_name, screen_name)
                await pilot.pause()
                before = screen_rows(app)
                words = f"while {screen_name} is open"
                app.notify(words, title="t", timeout=60, markup=False)
                await wait_for(pilot, lambda: any(words in line.text for line in app.screen.query(NoticeLine)),
                               f"the notice on {screen_name}")
                await pilot.pause()
                rows = screen_rows(app)
                assert rows[-1].strip().startswith("t: " + words), rows[-1]
                assert rows[:-1] == before[:-1], "the modal's text moved or was covered"
                assert not _toasts_on(app.screen)
                await pilot.press("escape")
                await wait_for(pilot, lambda: app.screen is app.screen_stack[0], "the modal closed")
                await pilot.pause()
                assert screen_rows(app)[-1].strip().startswith("t: " + words)  # the rest of its time
                app.clear_notifications()

    run(script())
