"""What passes between an armed process and `hooktui attach`: lines over a Unix socket.

Each line is one message: a kind letter, then JSON. `E` is a firing exactly as a trace file
line holds it (engine/records/trace_file.py's `event_json`), `M` a control message. Plain
JSON only, never pickle. Both ends treat what they read as untrusted: a line is read only
up to its kind's limit, and decoded with msgspec straight into typed, bounded structs
(unknown fields refused), the firings and the model's description by the trace-file reader
itself, with every check a file gets.

The commands (attacher → armed process), after `hello` with the token:
`open` (which step, and whether to pause or only record it), `step`, `step_into`, `finish`,
`continue`, `run` (no more pauses), `breakpoints` (the whole list, sent before a command
that lets the model go on when it changed), `eval` (one console line at a firing), `quit`.
Back: `welcome` / `refused`, `opened` (the step's TraceInfo), `E` firings, `state`
(running / paused / finished, with why it stopped), `result` (a console line's), `bye`.
"""

from __future__ import annotations

import math
import socket
from typing import Annotated, Any, Literal, Union

import msgspec
from msgspec import Meta, Struct

from ..engine.analysis.breakpoints import KINDS, STATS, Breakpoint
from ..engine.records import firing
from ..engine.records.trace_file import HEADER_LINE_MAX, LINE_MAX, TraceFileError, decode_event_line, decode_info, decode_tensor

VERSION = 1
COMMAND_MAX = 1 << 20  # bytes of one line from the attacher (a long breakpoint list fits)
TEXT_MAX = 20_000
NAME_MAX = 1_000
BREAKPOINTS_MAX = 10_000
Text = Annotated[str, Meta(max_length=TEXT_MAX)]
Name = Annotated[str, Meta(max_length=NAME_MAX)]
Count = Annotated[int, Meta(ge=0, le=2**63 - 1)]
Token = Annotated[str, Meta(pattern="^[0-9a-f]{64}$")]


class WireError(Exception):
    """A line the other end sent is not a message of this protocol; `str()` says why."""


class _Message(Struct, forbid_unknown_fields=True, tag_field="op"):
    pass


# -- attacher → armed process -------------------------------------------------------------------
class Hello(_Message, tag="hello"):
    token: Token
    version: int = VERSION


class Open(_Message, tag="open"):
    record: bool = False  # record the step (every firing sent), never pause
    step: Count | None = None  # the step with this number (hooktui.arm counts them)
    when: Text | None = None  # a Python expression: the step whose loss makes it true
    nonfinite: bool = False  # the step where a NaN/Inf first appears, paused there


class Go(_Message, tag="go"):
    how: Literal["step", "step_into", "finish", "continue", "run"]


class WireBreakpoint(Struct, forbid_unknown_fields=True):
    kind: Literal[KINDS]
    module: Name = "*"
    phase: Literal["forward", "backward"] | None = None
    hook: Literal[tuple(firing.HOOK_KINDS)] | None = None
    user_hook: Count | None = None
    tensor: Name = "*"
    stat: Literal[STATS] = "norm"
    bound: float | Literal["inf"] = "inf"
    inf: bool = True
    born_only: bool = False
    expression: Text = ""
    enabled: bool = True
    hits: Count = 0


class Breakpoints(_Message, tag="breakpoints"):
    items: Annotated[list[WireBreakpoint], Meta(max_length=BREAKPOINTS_MAX)] = []
    skip: Annotated[list[Literal[tuple(firing.HOOK_KINDS)]], Meta(max_length=64)] = []
    backward: bool = False  # break when backward starts


class Eval(_Message, tag="eval"):
    id: Count
    text: Text
    index: Count
    sub: Count = 0


class Quit(_Message, tag="quit"):
    pass


FromAttacher = Union[Hello, Open, Go, Breakpoints, Eval, Quit]


# -- armed process → attacher -------------------------------------------------------------------
class Welcome(_Message, tag="welcome"):
    pid: Count
    step: Count  # steps started so far
    model: Text
    rank: Count | None = None
    world: Count | None = None


class Refused(_Message, tag="refused"):
    why: Text


class Waiting(_Message, tag="waiting"):
    """The request is taken: the process waits for the step (it is at step `step`)."""

    step: Count


class Opened(_Message, tag="opened"):
    step: Count
    info: Any  # a TraceInfo as a header holds it: decoded by the trace-file reader


class Stop(Struct, forbid_unknown_fields=True):
    index: Count
    sub: Count
    reason: Text
    breakpoint: WireBreakpoint


class State(_Message, tag="state"):
    state: Literal["running", "paused", "finished", "failed"]
    stop: Stop | None = None
    names: Annotated[list[Name], Meta(max_length=64)] = []  # the run's console names (model, loss, ...)
    hits: Annotated[list[WireBreakpoint], Meta(max_length=BREAKPOINTS_MAX)] = []


class Result(_Message, tag="result"):
    id: Count
    expression: Text
    text: Text
    ok: bool = True
    output: Annotated[str, Meta(max_length=TEXT_MAX + 100)] = ""
    tensor: Any = None  # a tensor record as a firing holds it: decoded by the trace-file reader


class Bye(_Message, tag="bye"):
    why: Text


ToAttacher = Union[Welcome, Refused, Waiting, Opened, State, Result, Bye]

_FROM_ATTACHER = msgspec.json.Decoder(FromAttacher)
_TO_ATTACHER = msgspec.json.Decoder(ToAttacher)
_ENCODER = msgspec.json.Encoder()


# -- breakpoints both ways -----------------------------------------------------------------
def wire_breakpoint(bp: Breakpoint, enabled: bool = True, hits: int = 0) -> WireBreakpoint:
    bound: float | str = bp.bound if math.isfinite(bp.bound) else "inf"
    return WireBreakpoint(bp.kind, bp.module, bp.phase, bp.hook, bp.user_hook, bp.tensor, bp.stat, bound, bp.inf,
                          bp.born_only, bp.expression, enabled, hits)


def breakpoint_of(wire: WireBreakpoint) -> Breakpoint:
    """The Breakpoint a wire record names; WireError when it is not a valid one."""
    bound = math.inf if wire.bound == "inf" else float(wire.bound)
    try:
        return Breakpoint(wire.kind, wire.module, wire.phase, wire.hook, wire.user_hook, wire.tensor, wire.stat, bound,
                          wire.inf, wire.born_only, wire.expression)
    except ValueError as exc:
        raise WireError(f"a breakpoint: {exc}") from None


# -- lines -------------------------------------------------------------------------------------
def message_line(message: _Message) -> bytes:
    return b"M" + _ENCODER.encode(message) + b"\n"


def event_line(event_json: str) -> bytes:
    return b"E" + event_json.encode() + b"\n"


def decode_command(line: bytes) -> FromAttacher:
    if not line.startswith(b"M"):
        raise WireError("not a command")
    try:
        return _FROM_ATTACHER.decode(line[1:])
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError) as exc:
        raise WireError(f"a command: {str(exc).splitlines()[0][:200]}") from None


def decode_reply(line: bytes, where: str):
    """A message from the armed process: a control message (checked), an Event (the trace
    reader's checks), the Opened's info and a Result's tensor decoded the same way."""
    if line.startswith(b"E"):
        try:
            return decode_event_line(line[1:], where)
        except TraceFileError as exc:
            raise WireError(str(exc)) from None
    if not line.startswith(b"M"):
        raise WireError(f"{where}: not a message of hooktui attach")
    try:
        message = _TO_ATTACHER.decode(line[1:])
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError) as exc:
        raise WireError(f"{where}: {str(exc).splitlines()[0][:200]}") from None
    try:
        if isinstance(message, Opened):
            message.info = decode_info(message.info, f"{where}: the model's description")
        elif isinstance(message, Result) and message.tensor is not None:
            message.tensor = decode_tensor(message.tensor, f"{where}: a console result")
    except TraceFileError as exc:
        raise WireError(str(exc)) from None
    if isinstance(message, State):
        for wire in ([message.stop.breakpoint] if message.stop is not None else []) + list(message.hits):
            breakpoint_of(wire)  # raises when not a valid one
    return message


class LineReader:
    """Lines from a socket, each at most `limit` bytes (the first `first_limit`)."""

    def __init__(self, sock: socket.socket, limit: int, first_limit: int | None = None) -> None:
        self._file = sock.makefile("rb", buffering=1 << 16)
        self._limit = limit
        self._next_limit = first_limit or limit

    def read(self, limit: int | None = None) -> bytes | None:
        """The next line without its newline; None at the end of the stream."""
        limit = limit or self._next_limit
        self._next_limit = self._limit
        try:
            line = self._file.readline(limit + 2)
        except (OSError, ValueError):
            return None
        if not line:
            return None
        if not line.endswith(b"\n"):
            if len(line) > limit:
                raise WireError(f"a line longer than {limit} bytes")
            return None  # cut off by the end of the stream
        return line[:-1]

    def close(self) -> None:
        try:
            self._file.close()
        except OSError:
            pass


REPLY_LIMIT = LINE_MAX
OPENED_LIMIT = HEADER_LINE_MAX


def send(sock: socket.socket, data: bytes) -> None:
    """All of `data`, without SIGPIPE (a closed peer is an OSError)."""
    flags = getattr(socket, "MSG_NOSIGNAL", 0)
    view = memoryview(data)
    while view:
        sent = sock.send(view, flags)
        view = view[sent:]
