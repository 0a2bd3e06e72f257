"""A hostile trace file in the app: every pane, every firing, the error and help screens.
No control character may reach the screen, and no record text may be read as markup."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

import hostile
from hooktui.engine.records.records import Event, ModuleInfo, SourceLocation, TraceInfo
from hooktui.engine.records.trace_file import read_trace_file
from hooktui.ui.app import HooktuiApp
from hooktui.ui.screens.error import ErrorScreen

from ui_helpers import run, wait_for

CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def screen_text(app) -> str:
    """Every character the screen would draw now (the compositor's strips), one line per
    row joined by a tab (a newline or tab inside a row is itself a finding)."""
    return "\t".join("".join(segment.text for segment in strip) for strip in app.screen._compositor.render_strips())


@pytest.mark.parametrize("size", [(80, 24), (160, 50)])
def test_hostile_trace_shows_every_string_as_text(tmp_path, size):
    path = hostile.write(tmp_path / "evil.jsonl")
    trace = read_trace_file(path)
    app = HooktuiApp(recorded=(trace.info, trace.events), sources=trace.sources, show_timings=False)
    seen: list[str] = []

    async def script():
        async with app.run_test(size=size, notifications=True) as pilot:
            await pilot.pause()
            for position in range(len(trace.events)):
                app.goto(position, follow=False)
                await pilot.pause()
                if isinstance(app.screen, ErrorScreen):
                    seen.append(screen_text(app))
                    await pilot.press("f")  # the full traceback too
                    await pilot.pause()
                    seen.append(screen_text(app))
                    await pilot.press("escape")
                    await pilot.pause()
                for key in "txvao":
                    await pilot.press(key)
                    await pilot.pause()
                    seen.append(screen_text(app))
            for keys in (("j",), ("f",), ("question_mark",), ("ctrl+p",)):
                await pilot.press(*keys)
                await pilot.pause(0.2)
                seen.append(screen_text(app))
                await pilot.press("escape")
                await pilot.pause()
            assert app.is_running, "a record's text acted as an action"

    run(script())
    rows = [row for screen in seen for row in screen.split("\t")]
    text = "\n".join(rows)
    bad = sorted({repr(c) for row in rows for c in CONTROL.findall(row)})
    assert not bad, f"control characters reached the screen: {bad}"
    for payload in (hostile.TITLE, hostile.CLICK, hostile.CLOSING_TAG, hostile.BOLD):
        assert hostile.SHOWN[payload] in text, f"{hostile.SHOWN[payload]!r} is not shown as text"
    # Stored source lines are shown (the file itself does not exist here).
    assert "line 3" in text


def test_source_pane_never_opens_what_a_record_names(request, monkeypatch):
    """A record naming /dev/tty, /proc/self/environ or a pipe gets the recorded line only."""
    monkeypatch.setenv("HOOKTUI_SECRET", "s3cr3t-value")
    # A short folder: a long one (pytest-xdist's tmp_path is longer) wraps the pane's
    # "... is not readable here" line inside the words this test looks for.
    folder = tempfile.mkdtemp(prefix="hooktui-")
    request.addfinalizer(lambda: shutil.rmtree(folder))
    fifo = Path(folder) / "pipe.py"
    os.mkfifo(fifo)
    names = ["/dev/tty", "/proc/self/environ", str(fifo)]
    events = [
        Event(index=i, phase="forward", hook="forward", module="", module_type="Net", call=i,
              source=SourceLocation(name, 1, "forward", f"recorded line {i}"))
        for i, name in enumerate(names)
    ]
    app = HooktuiApp(recorded=(TraceInfo("t", [ModuleInfo("", "Net")], "l"), events), show_timings=False)
    screens = []

    async def script():
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("o")
            for position in range(len(events)):
                app.goto(position, follow=False)
                # The source pane fills in frames later (later still on a loaded machine).
                shown = lambda position=position: all(text in screen_text(app) for text in ("is not readable here", f"recorded line {position}"))  # noqa: E731
                await wait_for(pilot, shown, "the source pane")
                screens.append(screen_text(app))

    run(script())
    for i, screen in enumerate(screens):
        assert "is not readable here" in screen and f"recorded line {i}" in screen
        assert "s3cr3t-value" not in screen
