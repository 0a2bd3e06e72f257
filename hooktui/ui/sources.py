"""Where firings come from. The app talks to a Source and renders the Event records it
hands over; it cannot tell a live model from a recorded trace except by `live`. Every
record a source hands over has its text made visible (hooktui/visible.py): no string from
a model or a trace file reaches the terminal as control characters.

- LiveSource wraps an engine Session running in a daemon thread: firings are queued on
  that thread and the app is told with one EventsReady message per batch. Not a Textual
  thread worker: asyncio waits for those when the app ends, and a model inside a 30 s
  forward (or an endless loop) must not keep the process from quitting.
- RecordedSource holds a finished trace: every firing is known up front and stepping
  only moves through the list.
"""

from __future__ import annotations

import atexit
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from ..engine.analysis.breakpoints import Breakpoint, BreakpointList, Stop
from ..engine.records.records import Event, TensorRecord, TraceInfo, firings_with_user_hook
from ..engine.records.source_lines import file_lines
from ..engine.records.user_hook_records import UserHookInfo
from ..visible import visible_event, visible_info
from .messages import EventsReady, StateChanged

if TYPE_CHECKING:
    from textual.app import App

    from ..engine.run.session import Session

# States in which the model can still produce firings.
ADVANCING = ("ready", "running", "paused")

# Model threads are daemons (the process must be able to end without them), but one killed
# mid-unwind by interpreter shutdown can abort in torch's C++: at a normal exit, give each a
# moment to finish after it was told to quit. (`hooktui open` exits with os._exit instead
# when a model will not stop: hooktui.ui.process.)
_LIVE: weakref.WeakSet = weakref.WeakSet()


@atexit.register
def _let_models_finish() -> None:
    for source in list(_LIVE):
        source.quit()
        source.join(1.0)


class Source:
    live = False
    info: TraceInfo
    state = "ready"
    wall_time: float | None = None  # seconds the model ran (live only), pauses left out

    def start(self, app: App) -> list[Event]:
        """Begin; returns the firings known at once."""
        return []

    def drain(self) -> list[Event]:
        return []

    _files: dict[str, Mapping[int, str] | None] | None = None  # local files read so far

    def source_lines(self, filename: str) -> Mapping[int, str] | None:
        """The lines of `filename` by number, for the Source pane; None when unknown.
        Live, the local file (read only when it is a small regular Python file)."""
        if self._files is None:
            self._files = {}
        if filename not in self._files:
            self._files[filename] = file_lines(filename)
        return self._files[filename]

    def set_state(self, state: str) -> None:
        self.state = state

    @property
    def can_advance(self) -> bool:
        """Can the model produce more firings?"""
        return False

    def step(self) -> None: ...

    def step_into(self) -> None:
        """At a backward_pre firing: step through that call's autograd nodes."""
        self.step()

    def finish(self) -> None:
        """Run to the backward firing of the module call paused in."""

    def resume(self) -> None: ...

    def run_until(self, predicate: Callable[[Event], bool]) -> None:
        """Run on until a firing `predicate` accepts (or a breakpoint): the search's `n`."""

    def set_skipped(self, hooks: set[str]) -> None:
        """Hook kinds the model never pauses at (the ones the timeline hides)."""

    def quit(self) -> None: ...

    def join(self, timeout: float) -> bool:
        return True

    # The breakpoints: the live session's own list (its worker checks them), or the
    # recorded source's (find_stop walks the history with them).
    breakpoint_list: BreakpointList

    @property
    def breakpoints(self) -> frozenset[Breakpoint]:
        """The enabled ones."""
        return self.breakpoint_list.enabled

    def toggle_breakpoint(self, module: str) -> bool:
        return self.breakpoint_list.toggle(Breakpoint.on_module(module))

    def toggle_user_hook_breakpoint(self, hook_id: int) -> bool:
        return self.breakpoint_list.toggle(Breakpoint.on_user_hook(hook_id))

    @property
    def stop(self) -> Stop | None:
        """Why the model paused where it is (a breakpoint matched there), if it did."""
        return None

    def live_firing(self, event: Event | None):
        """The live objects of `event` (engine LiveFiring) when the model is paused in it."""
        return None

    def live_tensor(self, tensor: TensorRecord | None):
        """The live tensor behind `tensor` while the model is paused in its firing, else
        None (a recorded trace has none: only the values it kept)."""
        return None

    def paused_at(self, event: Event | None) -> bool:
        """Is the model paused in `event` (the console has its live objects there)?"""
        return self.live_firing(event) is not None

    def evaluate(self, text: str, event: Event, names: dict):
        """One console line at `event` (engine/analysis/console.py); `names`: what earlier
        lines bound, kept by the app."""
        from ..engine.analysis.console import evaluate

        live = self.live_firing(event)
        return evaluate(text, event, live, names, run_names=self.console_names(), past=live is None and self.live)

    def console_names(self) -> dict:
        """Names the console has at any firing of a live run, as pdb has the program's:
        `model`, and once the run has them, `loss`, `output` and `grads` (each parameter's
        final .grad by name). A recorded trace has none."""
        return {}

    def let_go_of_results(self) -> None:
        """The app on this source is closed for good: what the console's names hold can go."""

    def user_hooks(self, events: list[Event]) -> list[UserHookInfo]:
        """The model's own hooks: those that fired (a trace keeps no others)."""
        found: dict[int, UserHookInfo] = {}
        for event in firings_with_user_hook(events):
            found.setdefault(event.user_hook.hook.id, event.user_hook.hook)
        return [found[k] for k in sorted(found)]

    break_on_backward = False
    # Legacy firings: whether this source can show them at all, and whether they are
    # shown when the app opens (`L` toggles).
    records_legacy = True
    legacy_shown_at_start = True


class RecordedSource(Source):
    """A saved trace: no model, every firing known."""

    def __init__(self, info: TraceInfo, events: list[Event], sources: Mapping[str, Mapping[int, str]] | None = None) -> None:
        self.info = visible_info(info)
        self._events = events
        self._sources = dict(sources or {})
        self.state = "replay"
        self.breakpoint_list = BreakpointList()
        self.break_on_backward = False

    def start(self, app: App) -> list[Event]:
        return [visible_event(event) for event in self._events]

    def source_lines(self, filename: str) -> Mapping[int, str] | None:
        """The lines the trace stored when it was saved; a local file only when it stored
        none for that file (older traces, --json output)."""
        stored = self._sources.get(filename)
        return stored if stored else super().source_lines(filename)



class LiveSource(Source):
    """A Session run in a daemon thread beside `app`."""

    live = True

    def __init__(self, session: Session) -> None:
        self.session = session
        self.info = visible_info(session.trace.info)
        self.state = "ready"
        self.thread: threading.Thread | None = None
        self._pending: list[Event] = []
        self._notified = False
        self._lock = threading.Lock()
        self._post: Callable | None = None
        self._running_since: float | None = None
        self._finished = threading.Event()
        self._launched = False

    @property
    def records_legacy(self) -> bool:
        return self.session.legacy

    @property
    def legacy_shown_at_start(self) -> bool:
        """Shown when the session pauses at them (`hooktui --legacy`)."""
        return self.session.legacy and "legacy_backward" not in self.session.gate.skip_hooks

    # -- worker thread -------------------------------------------------------------
    def start(self, app: App) -> list[Event]:
        self._post = app.post_message
        self._launched = True
        _LIVE.add(self)
        threading.Thread(target=self._run, name="hooktui model", daemon=True).start()
        return []

    def _run(self) -> None:
        self.thread = threading.current_thread()
        try:
            self.session.run(on_event=self._on_event, on_state=self._on_state)
        finally:
            self._finished.set()

    def _on_event(self, event: Event) -> None:
        event = visible_event(event)  # on the worker thread: the app only ever sees safe text
        with self._lock:
            self._pending.append(event)
            notify = not self._notified
            self._notified = True
        if notify:  # one message until the app drains, however many firings come
            self._send(EventsReady())

    def _on_state(self, state: str) -> None:
        # wall_time: time the model ran, pauses left out.
        now = time.perf_counter()
        if self._running_since is not None:
            self.wall_time = (self.wall_time or 0.0) + now - self._running_since
            self._running_since = None
        if state == "running":
            self._running_since = now
        self._send(StateChanged(state))

    def _send(self, message) -> None:
        post = self._post
        if post is not None:
            try:
                post(message)
            except RuntimeError:  # the app's loop is closed: nobody is listening
                pass

    # -- app thread ----------------------------------------------------------------
    def drain(self) -> list[Event]:
        with self._lock:
            events, self._pending = self._pending, []
            self._notified = False
        return events

    @property
    def can_advance(self) -> bool:
        return self.state in ADVANCING

    @property
    def paused(self) -> bool:
        return self.state == "paused"

    def step(self) -> None:
        self.session.step()

    def step_into(self) -> None:
        self.session.step_into()

    def finish(self) -> None:
        self.session.finish()

    def set_skipped(self, hooks: set[str]) -> None:
        # One assignment: the worker thread never sees a half-updated set.
        self.session.gate.skip_hooks = set(hooks)

    def resume(self) -> None:
        self.session.resume()

    def run_until(self, predicate: Callable[[Event], bool]) -> None:
        self.session.run_until(predicate)

    def quit(self) -> None:
        self.session.quit()

    def join(self, timeout: float) -> bool:
        """Wait for the model's thread to end; True when it has (or never started)."""
        if not self._launched:
            return True
        return self._finished.wait(timeout)

    @property
    def breakpoint_list(self) -> BreakpointList:  # type: ignore[override]
        return self.session.gate.breakpoint_list

    @property
    def stop(self) -> Stop | None:
        return self.session.gate.stop if self.state == "paused" else None

    def console_names(self) -> dict:
        session = self.session
        names = {"model": session.model}
        if session.trace.loss is not None:
            names["loss"] = session.trace.loss
        if session.trace.output is not None:
            names["output"] = session.trace.output
        if session.final_grads:
            names["grads"] = dict(session.final_grads)
        return names

    def let_go_of_results(self) -> None:
        self.session.let_go_of_results()

    def live_firing(self, event: Event | None):
        current = self.session.current
        if self.state != "paused" or event is None or current is None or current.event is not event:
            return None
        return current

    def live_tensor(self, tensor: TensorRecord | None):
        current = self.session.current
        if tensor is None or tensor.shape is None or current is None or self.session.state != "paused":
            return None
        if not any(t is tensor for t in current.event.tensors):
            return None
        live = current.tensors.get(tensor.name)
        return live if live is not None and list(live.shape) == tensor.shape else None

    def user_hooks(self, events: list[Event]) -> list[UserHookInfo]:
        """Every hook found at start, and those registered so far."""
        return list(self.session.user_hooks.infos)

    @property
    def break_on_backward(self) -> bool:  # type: ignore[override]
        return self.session.gate.break_on_backward

    @break_on_backward.setter
    def break_on_backward(self, value: bool) -> None:
        self.session.gate.break_on_backward = value
