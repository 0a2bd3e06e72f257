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
    from ..ui.process import run_app

    return run_app(restartable_app(loaded, value_breakpoints(options.breaks), options.legacy))


def restartable_app(loaded, breakpoints, legacy: bool, previous=None):
    """The app on a new run of `loaded`; `R` in it builds the next one the same way, with the
    breakpoints (and their on/off), the break at backward, the legacy switch and the watch
    expressions the previous app had at its end (pdb's restart keeps its breakpoints)."""
    from ..ui.app import HooktuiApp
    from ..ui.sources import LiveSource

    # Legacy firings are always recorded, so that `L` can show them in the app; without
    # --legacy they start hidden and the model never pauses at them.
    # The app's history holds the firings (ui/history.py); the session keeps only the last.
    session = session_for(loaded, pause=True, legacy=True, keep_events=False)
    if previous is None:
        states = [(bp, True) for bp in breakpoints]
    else:
        states = [(state.breakpoint, state.enabled) for state in previous.source.breakpoint_list.states()]
        session.gate.break_on_backward = previous.source.break_on_backward
        legacy = previous.legacy_shown
        # The previous app is closed: its run's final .grad (kept for its console) goes now,
        # and the app (garbage with cycles: its history, its snapshots) is collected before
        # the new run freezes the collector; frozen, it lived through the whole next run.
        previous.source.let_go_of_results()
    for bp, enabled in states:  # before the run: a non-finite one also notes forward lines
        session.add_breakpoint(bp)
        if not enabled:
            session.gate.breakpoint_list.set_enabled(bp, False)
    if not legacy:
        session.gate.skip_hooks.add("legacy_backward")
    app = HooktuiApp(LiveSource(session), source_path=loaded.path,
                     restart=lambda app: restartable_app(loaded, breakpoints, legacy, previous=app))
    if previous is not None:
        app.watches = list(previous.watches)  # as pdb's display expressions, the watches stay
    return app
