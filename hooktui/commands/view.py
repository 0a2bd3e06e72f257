"""`hooktui view TRACE.jsonl`: the debugger on a saved trace, no model needed.

`--against OTHER.jsonl` compares the two runs (engine/analysis/compare.py, `--rtol`, `--atol` as for
`hooktui diff`): each tensor shows the other run's numbers beside its own, every firing
that differs is marked ≠ in the timeline, and the app opens at the first divergence.
"""

from __future__ import annotations

from ..errors import UserError
from ..engine.records.trace_file import TraceFileError, read_trace_file
from .options import ViewOptions


def run_view(options: ViewOptions) -> int:
    if not options.trace:
        raise UserError("view needs a trace file: hooktui view TRACE.jsonl")
    try:
        trace = read_trace_file(options.trace)
    except TraceFileError as exc:
        raise UserError(str(exc)) from exc
    against = None
    if options.against:
        from ..engine.analysis.compare import compare
        from ..ui.against import Against
        from ..visible import visible
        from .diff import read, tolerance

        other = read(options.against)
        ranks = (trace.info.rank, other.info.rank)
        against = Against(visible(options.against), compare(trace.events, other.events, tolerance(options.tolerances)), ranks)
    from ..ui.app import HooktuiApp
    from ..ui.process import run_app
    from .terminal import require_terminal

    require_terminal("open it from a terminal (over SSH: ssh -t), or compare it with `hooktui diff`")
    return run_app(HooktuiApp(recorded=(trace.info, trace.events), sources=trace.sources, against=against))
