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


def _notice_rows(app, screen=None) -> list[str]:
    """The screen's rows the notice line of `screen` (the main one by default) is drawn on."""
    line = (screen or app.screen_stack[0]).query_one(NoticeLine)
    return [row.strip() for row in screen_rows(app)[line.region.y:line.region.bottom]]


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
            region = lower.region
            for keys, words in cases:
                await pilot.press(*keys)
                rows = await _said(pilot, words)
                said = _notice_rows(app)
                assert said[0].startswith(words[:70]), said
                assert said[-1] == rows[-1].strip(), "the notice is on the last row"
                top = len(rows) - len(said)
                assert not any(words[:30] in row for row in rows[:top]), rows
                assert not _toasts_over(app, lower)
                assert lower.region == region  # nothing laid out again
                assert app._notifications  # still a notice for Textual (its list, the palette's log)
                # The panes above the notice are as they were: nothing drawn over the stats.
                assert rows[lower.region.y + 2:top] == stats_rows[:top - lower.region.y - 2]
            await pilot.press("S")
            await pilot.pause()
            app.screen.query_one("#save-input").value = str(saved)
            await pilot.press("enter")
            await _said(pilot, "save: saved ")
            said = _notice_rows(app)
            assert said[0].startswith("save: saved "), said
            # The path is read whole: the notice takes a second row rather than cut it.
            assert f"hooktui view {saved}" in "".join(said) or f"hooktui view {saved}" in " ".join(said), said
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
            await wait_for(pilot, lambda: not app.query_one(NoticeLine).display, "the notice gone")
            await pilot.pause()
            assert footer.display and footer.region.bottom == app.screen.region.bottom
            assert "q Quit" in screen_rows(app)[-1], "the footer's keys back on the last row"

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
                return not line.display

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


def test_at_80x24_a_long_notice_takes_two_rows_over_the_footer_and_is_cut_after_them():
    """A notice longer than the row is read on two rows (the footer's and the one above it),
    drawn over them: the panes keep their place. Longer than two rows, the second ends
    with "…"; Textual's notification list keeps the whole text."""
    app = sample_app("seed.py")
    fits = "a" * 60 + " " + "b" * 60  # 123 characters: two rows at 80 columns
    too_long = " ".join(f"w{k:02d}" for k in range(60))  # 239 characters

    async def script():
        async with app.run_test(size=(80, 24), notifications=True) as pilot:
            await paused_at(pilot, 0)
            lower = app.query_one(LowerPanes)
            region, before = lower.region, screen_rows(app)
            app.notify(fits, title="t", timeout=60, markup=False)
            await _said(pilot, fits)
            said = _notice_rows(app)
            assert said == ["t: " + "a" * 60, "b" * 60], said
            rows = screen_rows(app)
            # The panes did not move (the tab bar's underline slides: not compared).
            top = lower.region.y + 2
            assert rows[top:-2] == before[top:-2] and lower.region == region
            app.clear_notifications()
            path = "/" + "/".join(f"dir{k:02d}" for k in range(20)) + "/run.jsonl"  # 110 characters, no space
            app.notify(f"hooktui view {path}", title="t", timeout=60, markup=False)
            await _said(pilot, path)
            said = _notice_rows(app)
            assert len(said) == 2 and path in "".join(said), said  # cut anywhere, read whole
            app.clear_notifications()
            app.notify(too_long, title="t", timeout=60, markup=False)
            await _said(pilot, too_long)
            said = _notice_rows(app)
            assert len(said) == 2 and said[0].startswith("t: w00 w01") and said[1].endswith("…"), said
            assert len(" ".join(said)) < len("t: " + too_long)
            assert any(n.message == too_long for n in app._notifications)

    run(script())


def test_the_palettes_notices_show_a_cut_notice_whole_newest_first():
    """What a one- or two-row notice cut (or a toast took away) is read whole in the
    palette's "Notices", newest first; markup and control characters are shown as text."""
    app = sample_app("seed.py")
    long = " ".join(f"w{k:02d}" for k in range(60)) + " the-end"

    async def script():
        async with app.run_test(size=(80, 24), notifications=True) as pilot:
            await paused_at(pilot, 0)
            app.notify("[b]older[/] \x1b[2J", title="first", timeout=0.1, markup=False)
            app.notify(long, title="second", severity="warning", timeout=0.1, markup=False)
            await wait_for(pilot, lambda: not app.query_one(NoticeLine).display, "the notices gone")
            await pilot.press("ctrl+p", *"Notices")
            await pilot.pause(0.2)
            await pilot.press("enter")
            await wait_for(pilot, lambda: type(app.screen).__name__ == "NoticesScreen", "the notices screen")
            await pilot.pause()
            text = " ".join(row.strip(" │╭╮╰╯─") for row in screen_rows(app))
            assert "second: " + long[:40] in text and "the-end" in text, text
            assert text.index("second: ") < text.index("first: "), "newest first"
            assert "first: [b]older[/] \\x1b[2J" in text, text
            await pilot.press("escape")
            await wait_for(pilot, lambda: app.screen is app.screen_stack[0], "back to the debugger")

    run(script())
