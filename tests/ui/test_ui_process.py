"""The app as a process: a crash is never exit status 0 (hooktui.ui.process)."""

from __future__ import annotations

from pathlib import Path

import hooktui.ui.app
from hooktui.engine.records.records import Event, ModuleInfo, TraceInfo
from hooktui.ui.app import HooktuiApp
from hooktui.ui.sources import LiveSource
from hooktui.ui.process import run_app

CSS = str(Path(hooktui.ui.app.__file__).with_name("app.tcss"))  # subclasses here would look beside this file


class CrashingApp(HooktuiApp):
    CSS_PATH = CSS

    def _render_current(self) -> None:
        raise RuntimeError("a bug in a pane")


def _recorded():
    return TraceInfo("t", [ModuleInfo("", "Net")], "l"), [Event(index=0, phase="forward", hook="forward", module="", module_type="Net", call=0)]


def test_a_crashed_app_exits_non_zero(capsys):
    assert run_app(CrashingApp(recorded=_recorded()), headless=True) == 1
    assert "a bug in a pane" in capsys.readouterr().err  # Textual printed the crash


def test_quitting_exits_zero():
    class QuitAtOnce(HooktuiApp):
        CSS_PATH = CSS

        def on_ready(self) -> None:
            self.call_later(self.action_quit)

    assert run_app(QuitAtOnce(recorded=_recorded()), headless=True) == 0


def test_sys_exit_in_the_model_is_shown_and_the_app_stays_usable():
    from hooktui.engine.run.session import Session
    from hooktui.ui.screens.error import ErrorScreen

    from ui_helpers import run, wait_for
    from ui_models import ExitsInForward, inputs

    app = HooktuiApp(LiveSource(Session(ExitsInForward(), inputs())), show_timings=False)

    async def script():
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            await wait_for(pilot, lambda: app.state == "paused", "the first pause")
            await pilot.press("c")
            await wait_for(pilot, lambda: isinstance(app.screen, ErrorScreen), "the error window")
            assert app.state == "failed" and app.history.error.error.type == "SystemExit"
            await pilot.press("escape", "g")
            await pilot.pause()
            assert app.history.cursor == 0 and app.is_running

    run(script())
