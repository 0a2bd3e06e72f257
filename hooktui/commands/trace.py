"""`hooktui trace MODEL`: run forward and backward without pausing, print every firing.

stdout holds only the records (the table, or JSON lines with --json); the model's own
prints go to stderr (model_output.py). `--save FILE` is checked before the model runs and
written atomically, even when stdout is a pipe that closed early (`| head`). Without
`--save` or a value breakpoint, each firing is let go once printed: memory stays flat
however long the run.

With value breakpoints (--stop-at-nonfinite, --stop-above) the run stops at the first
firing one of them matches: the firings up to it are printed, then where the bad value was
born (engine/analysis/born.py; with --json, one last record `{"stopped": ...}`), and the exit
status is 3, for a CI job or a sweep to test.

Legacy firings are always recorded, as in the app; without --legacy they are left out of
what is printed and saved, their numbers skipped (engine/records/firing.py: a firing has the same
number everywhere). A value breakpoint never stops at one, so the stop is always a firing
this table prints.
"""

from __future__ import annotations

import json
import os
import sys

from ..engine.run import device_errors
from ..engine.analysis.born import where_born
from ..engine.records import firing
from ..engine.records.records import firing_number
from ..engine.records.trace_file import TraceFileError, check_save_path, event_json, write_trace
from ..errors import Interrupted, Terminated, UserError
from ..visible import visible
from .breaks import value_breakpoints
from .end_requests import end_requests_raise
from .common import load, session_for
from .model_output import records_stdout
from .options import TraceOptions
from .standard_streams import stdout_closed
from .table import format_event, format_header


EXIT_STOPPED = 3
EXIT_FAILED_OUTPUT = 1  # stdout could not be written (not the model's fault, not bad input)


def write_stop(write, events, stop, as_json: bool) -> None:
    """Where the run stopped and, for a value breakpoint, where the value was born."""
    bp = stop.breakpoint
    born = where_born(events, bp, upto=stop.key) if bp.kind in ("nonfinite", "threshold") else None
    if as_json:
        number = {"index": stop.index, "sub": stop.sub} if stop.sub else {"index": stop.index}
        record = {"stopped": {**number, "breakpoint": bp.label, "reason": stop.reason,
                              "born": None if born is None else {
                                  "seen": born.seen, "origin": born.origin, "origin_sub": born.origin_sub, "phase": born.phase, "module": born.module,
                                  "call": born.call, "tensor": born.tensor, "what": born.what, "explanation": born.lines}}}
        write(json.dumps(record))
        return
    write("")
    write(visible(f"stopped at #{firing_number(*stop.key)}: {bp.label}: {stop.reason}"))
    if born is not None:
        write("where it was born:")
        for line in born.lines:
            write("  " + visible(line))


def _end_forked_child(exception: BaseException | None) -> None:
    """A child the model forked (os.fork) unwound out of the run, with sys.exit or an
    exception: it ends here with its own status, printing and saving nothing of hooktui's."""
    code = 1 if exception is not None else 0
    if isinstance(exception, SystemExit):
        code = exception.code if isinstance(exception.code, int) else (0 if exception.code is None else 1)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    os._exit(code)


class _Save:
    """What `--save FILE` decides, in one place: the path is checked before the model runs
    (here); a closed stdout does not end the run, the file is still to be written
    (`wanted`); a stdout that failed leaves any previous file (`unwritten`); a run that
    ended is written from the firings the table shows, opening at the stop (`write`). The
    firings are kept for it by `TraceOptions.keep_events`."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        if path is not None:
            try:
                check_save_path(path)
            except TraceFileError as exc:
                raise UserError(str(exc)) from exc

    @property
    def wanted(self) -> bool:
        return self.path is not None

    def unwritten(self) -> str:
        """What a failed stdout leaves of the file, for its message."""
        return f"; {self.path} was not written (any previous file is unchanged)" if self.wanted else ""

    def write(self, trace, stop, shown) -> None:
        if not self.wanted:
            return
        if stop is not None:  # `hooktui view` opens there, and says why (the app's Stop from the records)
            trace.info.stopped_at, trace.info.stopped_sub = stop.key
        try:
            write_trace(self.path, trace.info, [e for e in trace.events if shown(e)])
        except (TraceFileError, OSError) as exc:
            reason = str(exc) if isinstance(exc, TraceFileError) else f"{self.path}: {exc.strerror or exc}"
            raise UserError(f"could not save the trace: {reason} (any previous file is unchanged)") from exc


def _pickling_advice(error, label: str) -> str | None:
    """pickle (a multiprocessing Pool, torch.save) cannot find the model file's functions by
    a private module name (engine/run/loader.py: a name that is not the file's own)."""
    if "hooktui_model_" not in error.message or "pickl" not in (error.type + error.message).lower():
        return None
    return (f"pickle finds a function by its module's name, and {label}'s name is not one it can import (taken, or not "
            "a Python name): rename the file, e.g. my_model.py, or put the function in a module of its own")


def run_trace(options: TraceOptions) -> int:
    with end_requests_raise():
        return _run_trace(options)


def _run_trace(options: TraceOptions) -> int:
    save = _Save(options.save)
    if stdout_closed():  # `>&-`: refused before the model runs, never blamed on it
        raise UserError(f"cannot write to standard output: it is closed (to discard the firings: >/dev/null){save.unwritten()}",
                        exit_status=EXIT_FAILED_OUTPUT)
    with records_stdout() as out:
        loaded = load(options.model)
        breakpoints = value_breakpoints(options.breaks)
        session = session_for(loaded, pause=False, legacy=True, keep_events=options.keep_events, values=options.values)
        for bp in breakpoints:
            session.add_breakpoint(bp)
        if breakpoints:
            session.gate.resume()  # run freely, stop at a breakpoint
        stopped = []
        closed = False
        failed: list[OSError] = []  # stdout could not be written: the run is stopped, nothing saved
        pid = os.getpid()

        def write(text: str) -> None:
            nonlocal closed
            if closed:
                return
            try:
                out.write(text + "\n")
            except BrokenPipeError:  # `hooktui trace ... | head`: stop printing quietly
                closed = True
                if not save.wanted:
                    session.quit()  # nobody is reading and nothing is to be saved
            except (OSError, ValueError) as exc:  # a full disk, an I/O error, a closed stream: said as such, never as the model's error
                closed = True
                failed.append(exc if isinstance(exc, OSError) else OSError(str(exc)))
                session.quit()

        if not options.json:
            write(format_header(session.trace.info))

        def shown(event) -> bool:
            return firing.is_shown(event.hook, options.legacy)

        def on_event(event) -> None:
            if event.hook != "error" and shown(event):
                write(event_json(event) if options.json else format_event(event))

        def on_state(state) -> None:
            if state == "paused":  # only a breakpoint pauses this run: note it, end the run
                stopped.append(session.gate.stop)
                session.quit()

        trace = session.run(on_event=on_event, on_state=on_state)
        if os.getpid() != pid:  # a process the model forked, ending through here: not ours to save or report
            _end_forked_child(trace.exception)
        if isinstance(trace.exception, Terminated):  # SIGTERM, SIGHUP: as Ctrl+C, with its own status
            raise trace.exception
        if isinstance(trace.exception, KeyboardInterrupt):  # Ctrl+C: the run did not end, keep any previous file
            raise Interrupted()
        if stopped and not failed:
            write_stop(write, trace.events, stopped[0], options.json)
    if failed:
        raise UserError(f"cannot write to standard output: {failed[0].strerror or failed[0]}{save.unwritten()}",
                        exit_status=EXIT_FAILED_OUTPUT)
    save.write(trace, stopped[0] if stopped else None, shown)
    if stopped:
        return EXIT_STOPPED
    if closed:
        return 0
    if trace.error is not None:
        # The device-mismatch advice, else what usually goes wrong there.
        fix = device_errors.advice(trace.error.message, trace.error_in_loss) or _pickling_advice(trace.error, loaded.label)
        if trace.error_in_loss:
            raise UserError(
                f"{loaded.label}: computing the loss failed: {trace.error.type}: {trace.error.message}"
                + (f" ({fix})" if fix else " (loss_fn(output) must return a one-element tensor that requires grad)"),
                details=trace.error.traceback,
            )
        where = trace.events[-1]
        module = f"module {where.module!r} ({where.module_type})" if where.module else "the model"
        raise UserError(
            f"{loaded.label}: {module} raised during {where.phase}: {trace.error.type}: {trace.error.message}"
            + (f" ({fix})" if fix else " (check that the inputs fit the model; --traceback shows where)"),
            details=trace.error.traceback,
        )
    return 0
