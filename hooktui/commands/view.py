"""`hooktui view TRACE.jsonl`: the debugger on a saved trace, no model needed."""

from __future__ import annotations

from ..cli import UserError
from ..engine.trace_file import TraceFileError, read_trace_file


def run_view(args) -> int:
    if not args.target:
        raise UserError("view needs a trace file: hooktui view TRACE.jsonl")
    try:
        trace = read_trace_file(args.target)
    except TraceFileError as exc:
        raise UserError(str(exc)) from exc
    from ..ui.app import HooktuiApp
    from ..ui.process import run_app

    return run_app(HooktuiApp(recorded=(trace.info, trace.events), sources=trace.sources))
