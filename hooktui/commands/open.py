"""`hooktui [open] MODEL`: the debugger."""

from __future__ import annotations

from .breaks import value_breakpoints
from .common import load, session_for
from .options import OpenOptions
from .terminal import require_terminal


def run_open(options: OpenOptions) -> int:
    loaded = load(options.model)  # bad input is said first, terminal or not
    model = f" {options.model.target}" if options.model.target else ""
    require_terminal(f"`hooktui trace{model}` prints the firings instead")
    from ..ui.app import HooktuiApp
    from ..ui.sources import LiveSource
    from ..ui.process import run_app

    # Legacy firings are always recorded, so that `L` can show them in the app; without
    # --legacy they start hidden and the model never pauses at them.
    session = session_for(loaded, pause=True, legacy=True)
    for bp in value_breakpoints(options.breaks):  # before the run: a non-finite one also notes forward lines
        session.add_breakpoint(bp)
    if not options.legacy:
        session.gate.skip_hooks.add("legacy_backward")
    return run_app(HooktuiApp(LiveSource(session), source_path=loaded.path))
