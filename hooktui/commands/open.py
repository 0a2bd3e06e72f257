"""`hooktui [open] MODEL`: the debugger."""

from __future__ import annotations

from .common import load, session_for


def run_open(args) -> int:
    loaded = load(args)
    from ..ui.app import HooktuiApp

    app = HooktuiApp(session=session_for(loaded, pause=True), source_path=loaded.path)
    app.run()
    return 0
