"""`hooktui attach PID`: the app on the next step of a training already running.

The process must be armed (hooktui.arm(model), or `hooktui run --armed`). This process
connects to its socket (attach/client.py), asks for a step (the next one, `--step N`,
`--when EXPR`, `--break-nonfinite`), waits for it to begin, then opens the app on it (the
engine stays in the training process: ui/remote_source.py). `--record FILE` saves the step
instead, without pausing it. Quitting detaches: the training goes on, hooktui's hooks off
at the step's end. Under torchrun, `--rank R` opens that rank.
"""

from __future__ import annotations

import sys

from ..attach import wire
from ..attach.client import AttachError, Connection, find_rank, pid_argument
from ..engine.records.records import Event
from ..engine.records.trace_file import TraceFileError, check_save_path, write_trace
from ..errors import UserError
from ..visible import visible
from .options import AttachOptions


def run_attach(options: AttachOptions) -> int:
    try:
        pid = pid_argument(options.pid)
        if options.record:
            try:
                check_save_path(options.record)
            except TraceFileError as exc:
                raise UserError(str(exc)) from None
        if options.step is not None and options.step < 0:
            raise UserError(f"--step {options.step}: steps are counted from 0")
        if options.rank is not None:
            pid = find_rank(pid, options.rank)
        if not options.record:
            from .terminal import require_terminal

            require_terminal("attach from a terminal (over SSH: ssh -t), or save the step with --record FILE")
        connection = Connection(pid)
        step = options.step
        request = wire.Open(record=bool(options.record), step=step, when=options.when, nonfinite=options.nonfinite)
        opened, first = open_step(connection, request, say=_say)
    except AttachError as exc:
        raise UserError(str(exc)) from None
    if options.record:
        return _record(connection, opened, first, options.record)
    return run_attached_app(connection, opened, first)


def open_step(connection: Connection, request: wire.Open, say=None, on_waiting=None) -> tuple[wire.Opened, list[Event]]:
    """Ask for the step and wait until it begins: its Opened (the TraceInfo) and the firings
    that came with it. AttachError when the process refuses or leaves first. `on_waiting()`:
    called once the process has taken the request."""
    connection.send(request)
    try:
        while True:
            message = connection.read()
            if message is None:
                raise AttachError(f"{connection.label} closed the connection before the step began")
            if isinstance(message, wire.Refused):
                raise AttachError(f"{connection.label} refused: {message.why}")
            if isinstance(message, wire.Bye):
                raise AttachError(f"{connection.label}: {message.why}")
            if isinstance(message, wire.Waiting):
                if say is not None:
                    say(_waiting_line(connection, request, message.step))
                if on_waiting is not None:
                    on_waiting()
            if isinstance(message, wire.Opened):
                return message, []
    except KeyboardInterrupt:
        try:
            connection.send(wire.Quit())
        finally:
            connection.close()
        raise


def _waiting_line(connection: Connection, request: wire.Open, at: int) -> str:
    which = (f"step {request.step}" if request.step is not None else
             f"the first step where {request.when}" if request.when else
             "the first step with a NaN/Inf" if request.nonfinite else "the next step")
    traced = " (each step is traced until then)" if request.when or request.nonfinite else ""
    return (f"attached to {connection.label}, {visible(connection.welcome.model)}, at step {at}; waiting for {which}{traced}; "
            "Ctrl+C gives up")


def attached_app(connection: Connection, opened: wire.Opened, first: list[Event]):
    from ..ui.attach_app import AttachApp
    from ..ui.remote_source import RemoteSource

    source = RemoteSource(connection, opened.info, first)
    return AttachApp(source=source, where=connection.label)


def run_attached_app(connection: Connection, opened: wire.Opened, first: list[Event]) -> int:
    from ..ui.process import run_app

    return run_app(attached_app(connection, opened, first))


def _record(connection: Connection, opened: wire.Opened, first: list[Event], path: str) -> int:
    events = list(first)
    state = "running"
    try:
        while True:
            message = connection.read()
            if message is None:
                break
            if isinstance(message, Event):
                events.append(message)
            elif isinstance(message, wire.State):
                state = message.state
                if state in ("finished", "failed"):
                    break
            elif isinstance(message, wire.Bye):
                break
    except AttachError as exc:
        raise UserError(str(exc)) from None
    finally:
        try:
            connection.send(wire.Quit())
        except OSError:
            pass
        connection.close()
    if state not in ("finished", "failed"):
        raise UserError(f"{connection.label} left before step {opened.step} ended; nothing saved")
    try:
        write_trace(path, opened.info, events)
    except (TraceFileError, OSError) as exc:
        raise UserError(f"could not save {path}: {exc}") from None
    _say(f"recorded step {opened.step} of {connection.label} ({len(events)} firings) to {path}; open it with: hooktui view {path}")
    return 0


def _say(line: str) -> None:
    try:
        print(f"hooktui: {line}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
