"""`hooktui trace MODEL`: run forward and backward without pausing, print every firing."""

from __future__ import annotations

import sys
from contextlib import nullcontext, redirect_stdout

from ..cli import UserError
from ..engine.trace_file import event_json, write_trace
from .common import load, session_for
from .table import format_event, format_header


def run_trace(args) -> int:
    loaded = load(args)
    session = session_for(loaded, pause=False, legacy=args.legacy)
    out = sys.stdout
    if not args.json:
        out.write(format_header(session.trace.info) + "\n")

    closed = False

    def on_event(event) -> None:
        nonlocal closed
        if event.hook == "error" or closed:
            return
        try:
            out.write((event_json(event) if args.json else format_event(event)) + "\n")
        except BrokenPipeError:  # `hooktui trace ... | head`: stop quietly
            closed = True
            session.quit()

    # With --json, what the model itself prints (a user's hook printing grad_input) goes to
    # stderr, so stdout stays one JSON record a line.
    with redirect_stdout(sys.stderr) if args.json else nullcontext():
        trace = session.run(on_event=on_event)
    if closed:
        sys.stdout = None  # nothing more can reach the closed pipe
        return 0
    if args.save:
        write_trace(args.save, trace.info, trace.events)
    if trace.error is not None:
        if trace.error_in_loss:
            raise UserError(
                f"{loaded.label}: computing the loss failed: {trace.error.type}: {trace.error.message}"
                " (loss_fn(output) must return a one-element tensor that requires grad)",
                details=trace.error.traceback,
            )
        where = trace.events[-1]
        module = f"module {where.module!r} ({where.module_type})" if where.module else "the model"
        raise UserError(
            f"{loaded.label}: {module} raised during {where.phase}: {trace.error.type}: {trace.error.message}"
            " (check that the inputs fit the model; --traceback shows where)",
            details=trace.error.traceback,
        )
    return 0
