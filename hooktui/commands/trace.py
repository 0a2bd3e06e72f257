"""`hooktui trace MODEL`: run forward and backward without pausing, print every firing.

stdout holds only the records (the table, or JSON lines with --json); the model's own
prints go to stderr (model_output.py). `--save FILE` is checked before the model runs and
written atomically, even when stdout is a pipe that closed early (`| head`).

Legacy firings are always recorded, as in the app, so that a firing has the same number
everywhere (the app, the table, --json, a saved file, the Explain pane's "#N"); without
--legacy they are left out of what is printed and saved.
"""

from __future__ import annotations

from ..cli import UserError
from ..engine.trace_file import TraceFileError, check_save_path, event_json, write_trace
from .common import load, session_for
from .model_output import records_stdout
from .table import format_event, format_header


def run_trace(args) -> int:
    if args.save is not None:
        try:
            check_save_path(args.save)
        except TraceFileError as exc:
            raise UserError(str(exc)) from exc
    with records_stdout() as out:
        loaded = load(args)
        session = session_for(loaded, pause=False, legacy=True)
        closed = False

        def write(text: str) -> None:
            nonlocal closed
            if closed:
                return
            try:
                out.write(text + "\n")
            except BrokenPipeError:  # `hooktui trace ... | head`: stop printing quietly
                closed = True
                if not args.save:
                    session.quit()  # nobody is reading and nothing is to be saved

        if not args.json:
            write(format_header(session.trace.info))

        def shown(event) -> bool:
            return args.legacy or event.hook != "legacy_backward"

        def on_event(event) -> None:
            if event.hook != "error" and shown(event):
                write(event_json(event) if args.json else format_event(event))

        trace = session.run(on_event=on_event)
    if args.save:
        try:
            write_trace(args.save, trace.info, [e for e in trace.events if shown(e)])
        except (TraceFileError, OSError) as exc:
            reason = str(exc) if isinstance(exc, TraceFileError) else f"{args.save}: {exc.strerror or exc}"
            raise UserError(f"could not save the trace: {reason} (any previous file is unchanged)") from exc
    if closed:
        return 0
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
