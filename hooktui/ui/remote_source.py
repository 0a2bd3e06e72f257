"""The Source of a step running in another process (`hooktui attach PID`).

To the app it is a live source like LiveSource: firings arrive, the state changes, `n`, `c`,
`s`, `f` move the model, breakpoints stop it, the console evaluates at the paused firing.
What differs is where the model is: every firing comes over the socket as a trace record
(checked as a trace file's line is: attach/wire.py), a thread here reads them and posts the
app the same messages LiveSource does; commands go back as lines. Breakpoints are kept here
(the app edits this list) and sent, whole, with the next command that lets the model go on
when they changed; each state the process sends carries its own list back (with hits, and
the non-finite breakpoint `--break-nonfinite` set there). Live tensors stay in the training
process: the Values grid shows the values the records kept.
"""

from __future__ import annotations

import itertools
import queue
import threading
from typing import TYPE_CHECKING

from ..attach import wire
from ..attach.client import AttachError, Connection
from ..engine.analysis.breakpoints import BreakpointList, BreakpointState, Stop
from ..engine.analysis.console import ConsoleResult
from ..engine.records.records import Event, TraceInfo
from ..visible import visible_event, visible_info
from .messages import EventsReady, StateChanged
from .sources import Source

if TYPE_CHECKING:
    from textual.app import App

EVAL_TIMEOUT = 30.0  # seconds a console line waits for the training process's answer


class RemoteSource(Source):
    live = True
    records_legacy = False
    legacy_shown_at_start = False

    def __init__(self, connection: Connection, info: TraceInfo, first: list[Event] | None = None) -> None:
        self.connection = connection
        self.info = visible_info(info)
        self.state = "running"
        self.breakpoint_list = BreakpointList()
        self._sent_breakpoints: tuple | None = ()
        self._skip: set[str] = set()
        self._backward = False
        self._stop: Stop | None = None
        self._names: list[str] = ["model"]
        self._pending: list[Event] = [visible_event(e) for e in (first or [])]
        self._lock = threading.Lock()
        self._notified = False
        self._post = None
        self._ids = itertools.count(1)
        self._answers: dict[int, queue.Queue] = {}
        self._closed = False
        self.ended_why: str | None = None  # the process left (a bye, the end of the stream)
        self.events_seen: list[Event] = []  # every firing, for `--record`-like uses and tests

    # -- the reader thread --------------------------------------------------------------------
    def start(self, app: App) -> list[Event]:
        self._post = app.post_message
        with self._lock:
            known, self._pending = self._pending, []
        threading.Thread(target=self._read, name="hooktui attach reader", daemon=True).start()
        return known

    def _read(self) -> None:
        try:
            while True:
                message = self.connection.read()
                if message is None:
                    break
                self._received(message)
        except AttachError as exc:
            self.ended_why = str(exc)
        finally:
            if self.state in ("running", "paused") and not self._closed:
                self.ended_why = self.ended_why or "the training process closed the connection"
                self._send(StateChanged("failed"))
            for answer in list(self._answers.values()):
                answer.put(None)

    def _received(self, message) -> None:
        if isinstance(message, Event):
            event = visible_event(message)
            with self._lock:
                self._pending.append(event)
                notify = not self._notified
                self._notified = True
            if notify:
                self._send(EventsReady())
        elif isinstance(message, wire.State):
            self._stop = None
            if message.stop is not None:
                self._stop = Stop(message.stop.index, wire.breakpoint_of(message.stop.breakpoint), message.stop.reason, message.stop.sub)
            self._names = list(message.names)
            states = [BreakpointState(wire.breakpoint_of(w), w.enabled, w.hits) for w in message.hits]
            self.breakpoint_list.replace_states(states)
            self._sent_breakpoints = self._breakpoints_now()
            self._send(StateChanged(message.state))
        elif isinstance(message, wire.Result):
            answer = self._answers.get(message.id)
            if answer is not None:
                answer.put(message)
        elif isinstance(message, wire.Bye):
            self.ended_why = message.why

    def _send(self, message) -> None:
        post = self._post
        if post is not None:
            try:
                post(message)
            except RuntimeError:
                pass

    # -- the app's thread ---------------------------------------------------------------------
    def drain(self) -> list[Event]:
        with self._lock:
            events, self._pending = self._pending, []
            self._notified = False
        self.events_seen.extend(events)
        return events

    @property
    def can_advance(self) -> bool:
        return self.state in ("running", "paused")

    def _go(self, how: str) -> None:
        self._sync_breakpoints()
        self._command(wire.Go(how=how))

    def step(self) -> None:
        self._go("step")

    def step_into(self) -> None:
        self._go("step_into")

    def finish(self) -> None:
        self._go("finish")

    def resume(self) -> None:
        self._go("continue")

    def set_skipped(self, hooks: set[str]) -> None:
        self._skip = set(hooks)

    def quit(self) -> None:
        """Detach: the training goes on, every hook of hooktui's off at the step's end."""
        if self._closed:
            return
        self._closed = True
        try:
            self.connection.send(wire.Quit())
        except OSError:
            pass
        self.connection.close()

    def _command(self, message) -> None:
        if self._closed:
            return
        try:
            self.connection.send(message)
        except OSError:
            pass  # the reader thread sees the end and says so

    def _breakpoints_now(self) -> tuple:
        states = tuple(sorted(((repr(s.breakpoint), s.enabled) for s in self.breakpoint_list.states())))
        return (states, tuple(sorted(self._skip)), self._backward)

    def _sync_breakpoints(self) -> None:
        now = self._breakpoints_now()
        if now == self._sent_breakpoints:
            return
        items = [wire.wire_breakpoint(s.breakpoint, s.enabled) for s in self.breakpoint_list.states()]
        self._command(wire.Breakpoints(items=items, skip=sorted(self._skip), backward=self._backward))
        self._sent_breakpoints = now

    @property
    def stop(self) -> Stop | None:
        return self._stop if self.state == "paused" else None

    @property
    def break_on_backward(self) -> bool:  # type: ignore[override]
        return self._backward

    @break_on_backward.setter
    def break_on_backward(self, value: bool) -> None:
        self._backward = value

    def console_names(self) -> dict:
        return dict.fromkeys(self._names)

    def paused_at(self, event: Event | None) -> bool:
        if event is None or self.state != "paused":
            return False
        with self._lock:
            pending = bool(self._pending)
        latest = self.events_seen[-1] if self.events_seen else None
        return not pending and latest is not None and latest.key == event.key

    def evaluate(self, text: str, event: Event, names: dict) -> ConsoleResult:
        ident = next(self._ids)
        answer: queue.Queue = queue.Queue()
        self._answers[ident] = answer
        try:
            self._command(wire.Eval(id=ident, text=text[: wire.TEXT_MAX], index=event.index, sub=event.sub))
            try:
                result = answer.get(timeout=EVAL_TIMEOUT)
            except queue.Empty:
                result = None
        finally:
            self._answers.pop(ident, None)
        if result is None:
            return ConsoleResult(text, "no answer from the training process", ok=False)
        return ConsoleResult(result.expression, result.text, ok=result.ok, tensor=result.tensor, output=result.output)
