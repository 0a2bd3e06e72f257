"""The hooktui app: panes over a Source of firings (sources.py), keys to move through them.

Data flows one way: the source hands over Event records, the History keeps them and the
cursor, and every pane renders the record under the cursor. A live model and a recorded
trace differ only in whether stepping past the last firing can ask the model for more.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Generic, TypeVar

from rich.text import Text
from textual import events, on
from textual.app import App, ComposeResult, SystemCommand
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Input

from ..engine.analysis.breakpoints import CONDITION_NAMES, Breakpoint, Stop
from ..engine.records.records import Event, TraceInfo, position_of
from ..engine.records.trace_file import TraceFileError, write_trace
from ..engine.records import firing
from .against import Against
from .ending import EndedBySignal, Ending, give_back_terminal
from .history import History
from .keys import BINDINGS, HELP, key_help
from .messages import EventsReady, FiringChosen, NoticeMade, StateChanged
from .navigation import NavigationActions
from .search_actions import SearchActions
from .watching import WatchActions
from .palette_commands import palette_commands
from ..visible import visible
from .paths import display_path
from .screens.breakpoints import BreakpointsScreen
from .screens.console import ConsoleScreen
from .screens.error import ErrorScreen
from .screens.goto import GotoScreen
from .screens.save import SaveScreen
from .screens.help import HelpScreen
from .screens.notices import KEPT as NOTICES_KEPT, NoticesScreen, SaidNotice
from .screens.overview import OverviewScreen
from .screens.palette import Palette
from .screens.user_hooks import UserHooksScreen, modules_with_user_hooks
from .sources import RecordedSource, Source
from .terminal_driver import drop_unreadable_size
from .widgets.filter_input import FilterInput
from .widgets.lower import LowerPanes
from .widgets.module_tree import ModuleTree
from .widgets.keys_footer import KeysFooter
from .widgets.notice import NOTICES_IN_LINE, NoticeLine, say_in_line
from .widgets.search_input import SearchBar
from .widgets.status import StatusInfo, StatusLine
from .widgets.timeline import Timeline

# While the model runs freely, the timeline and status follow at most this often, and the
# heavier panes (tree marks, tensors, values, autograd) at most every RUNNING_PANES seconds:
# the UI thread shares the GIL with the model's.
# Signals that end the app with the terminal restored and exit status 128 + N (only for
# the process's own app: exit_on_signals). Their default actions would kill the process
# with the terminal raw; SIGINT's would raise KeyboardInterrupt inside the app.
EXIT_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM)
RUNNING_REDRAW = 0.1
RUNNING_PANES = 0.5
RUNNING_DRAIN = 0.05
# While a run streams, the share of the time the app may spend drawing: the model's thread
# needs the GIL back after every torch op, and gets it only in the gaps (a redraw that
# takes longer than the time between redraws leaves it none: `c` was 10x slower).
STREAMING_UI_SHARE = 0.2
_MEASURING = object()  # in place of the redraw timer while a redraw's cost is measured


W = TypeVar("W")


class _Composed(Generic[W]):
    """The app's one widget of a class, found by a query on first use and kept."""

    def __init__(self, kind: type[W]) -> None:
        self.kind = kind

    def __set_name__(self, owner: type, name: str) -> None:
        self.attr = "_" + name

    def __get__(self, app, owner=None) -> W:
        if app is None:
            return self
        widget = app.__dict__.get(self.attr)
        if widget is None:
            widget = app.__dict__[self.attr] = app.query_one(self.kind)
        return widget


class HooktuiApp(SearchActions, NavigationActions, WatchActions, App):
    CSS_PATH = "app.tcss"
    TITLE = "hooktui"
    BINDINGS = BINDINGS
    HELP = HELP

    def __init__(
        self,
        source: Source | None = None,
        recorded: tuple[TraceInfo, list[Event]] | None = None,
        source_path: str | None = None,
        sources: Mapping[str, Mapping[int, str]] | None = None,
        *,
        show_timings: bool = True,
        exit_on_signals: bool = False,
        against: Against | None = None,
        restart: Callable[[HooktuiApp], HooktuiApp] | None = None,
        **kwargs,
    ) -> None:
        drop_unreadable_size()  # before Textual makes its Rich Console, which reads them
        super().__init__(**kwargs)
        self.add_class(NOTICES_IN_LINE)  # until the panes go side by side (_layout_changed)
        # The last notices, whole, for the palette's "Notices" (a deque: notify is thread-safe).
        self.notices_said: collections.deque[SaidNotice] = collections.deque(maxlen=NOTICES_KEPT)
        # The app reaches the engine only through its Source (ui/sources.py): a live
        # session's (LiveSource) or a recorded trace's, given as records here for short.
        if (source is None) == (recorded is None):
            raise ValueError("HooktuiApp needs a Source or a recorded (info, events), not both")
        self.source: Source = source if source is not None else RecordedSource(*recorded, sources=sources)
        self.source_path = source_path
        self.show_timings = show_timings
        self.against = against  # `view A --against B`: the other run, compared
        # `R` (pdb's restart): builds the next app, on a new run of the same model, from this
        # one (its breakpoints); run_app (ui/process.py) runs it once this one has ended.
        self.restart = restart
        self.restart_requested = False
        # EXIT_SIGNALS end the app (terminal restored) instead of killing the process
        # with the terminal still in raw mode; only for the process's own app (hooktui.ui.process).
        self.exit_on_signals = exit_on_signals
        # What the model printed while the app owned the terminal; written out after it.
        self.model_output: list[str] = []
        self._ending: Ending | None = None  # the signals that end the app (exit_on_signals)
        self.history = History()
        self.info = self.source.info
        self._stepping = False  # a step was asked of the model and has not paused yet
        self._queued_steps = 0
        self._render_pending = False  # a draw of the current firing is queued (_render_later)
        self._redraw_timer = None
        self._drain_timer = None
        self._overview_timer = None
        self._panes_drawn_at = 0.0
        self._redraw_gap = RUNNING_REDRAW  # between redraws while streaming (see STREAMING_UI_SHARE)
        self._timeline_behind = False  # firings in the history the timeline does not count yet
        self._bindings_state: tuple = ()
        self._error_shown = False
        self._summary_shown = False
        self._jumped_from: tuple[int, int] | None = None  # (from, to) of the last `j`
        self._tree_marked: tuple | None = None  # (phase, cursor, module, breakpoints) the tree's marks show
        # Why a run stopped at a firing (a breakpoint matched), by firing index: said in
        # the status line and the Explain pane.
        self.stops: dict[tuple[int, int], Stop] = {}  # by Event.key
        # Firings where B's break (when backward starts) stopped a run or a walk (Event.key): said in the status line.
        self.backward_stops: set[tuple[int, int]] = set()
        self.console_history: list[str] = []
        self.console_names: dict = {}  # what console statements bound (x = ...), for the app's lifetime
        self.console_results: list = []
        self.watches: list[str] = []  # watch expressions (W), evaluated at every firing shown; R keeps them
        # Legacy firings: shown when the session pauses at them (`hooktui --legacy`) or
        # a recorded trace has them; `L` toggles.
        self.legacy_shown = self.source.legacy_shown_at_start
        self.history.hidden = set(firing.hidden_kinds(self.legacy_shown))

    # -- layout ------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        with Horizontal(id="top"):
            yield ModuleTree(self.info, id="tree")
            with Vertical(id="timeline-box"):
                yield SearchBar(id="search")
                yield FilterInput(placeholder="& filter: only firings of modules matching (glob ok), escape clears", id="filter")
                width = max((len(m.name) for m in self.info.modules), default=6)
                marks = self.against.marks if self.against is not None else None
                yield Timeline(self.history, module_width=width, hidden=self.history.hidden, marks=marks, id="timeline")
        lower = LowerPanes(self.history.events, self.info, self.source.source_lines, id="lower")
        lower.hidden = self.history.hidden
        lower.stops = self.stops
        lower.against = self.against.tensors if self.against is not None else None
        lower.set_reactive(LowerPanes.watching, bool(self.watches))  # R kept them: the tab from the start
        yield lower
        yield KeysFooter(compact=True)
        yield NoticeLine(id="notice")

    def on_mount(self) -> None:
        if self._ending is not None:  # taken in run(), before Textual started
            self._ending.attach(asyncio.get_running_loop())
        elif self.exit_on_signals:
            self._ending = Ending(EXIT_SIGNALS, self._exit_on_signal)
            self._ending.install(asyncio.get_running_loop())
        # The model's print() would be lost behind the app: keep it for after.
        self.begin_capture_print(self, stdout=True, stderr=True)
        label = self.info.model
        self.title = f"hooktui: {display_path(label) if label.endswith('.py') else label}"
        if self.against is not None and self.against.ranks_text:
            self.title += f" ({self.against.ranks_text})"
        known = self.source.start(self)
        self.history.extend(known)
        if known:  # a recorded trace opens at its first firing, where its run stopped, or (against another) where they part
            # A file from an older hooktui may name a firing it does not hold or one this
            # view hides (a legacy firing): it opens at the next firing shown (firing.py).
            stopped = firing.visible_number(known, self.info.stopped_key, self.legacy_shown)
            first = self.against.first if self.against is not None else None
            if first is None:
                found = None if stopped is None else position_of(known, *stopped)
                first = found or 0
                self._recorded_stop(known[found] if found is not None else None)
            self.history.move(first)
            self.history.follow = False
            if self.against is not None:
                self.notify(self.against.summary(), title="against", timeout=6, markup=False)
        self.timeline.grow()
        self.module_tree.mark_user_hooks(modules_with_user_hooks(self.source.user_hooks(self.history.events)))
        self._fit_layout()
        self.timeline.focus()
        self._render_current()

    # The app's widgets are composed once: found once (a query walks the DOM each time).
    timeline = _Composed(Timeline)
    lower = _Composed(LowerPanes)
    status_line = _Composed(StatusLine)
    module_tree = _Composed(ModuleTree)

    def _fit_layout(self) -> None:
        self.lower.fit(self.size)

    @on(LowerPanes.LayoutChanged)
    def _layout_changed(self, message: LowerPanes.LayoutChanged) -> None:
        self.query_one(Footer).compact = not message.wide
        self.query_one("#top").set_class(message.wide, "-wide")
        self.set_class(not message.wide, NOTICES_IN_LINE)  # wide: the toasts have room
        if message.wide:
            for line in self.query(NoticeLine):
                line.clear()  # its toast shows now

    # -- the source's messages ------------------------------------------------------------
    def on_events_ready(self, message: EventsReady) -> None:
        if self.source.state == "running":
            # Streaming: let firings pile up for a moment, so that neither thread wakes
            # the other once per firing (they share the GIL).
            if self._drain_timer is None:
                self._drain_timer = self.set_timer(RUNNING_DRAIN, self._drain)
        else:
            self._drain()

    def _drain(self, render: bool = True) -> None:
        if self._drain_timer is not None:
            self._drain_timer.stop()
            self._drain_timer = None
        events = self.source.drain()
        if events:
            self.history.extend(events)
            self._timeline_behind = True
        if not self._timeline_behind:
            return
        if render and self.source.state == "running":
            self._render_soon()  # the timeline grows with the next redraw: one repaint, not one per batch
            return
        self._grow_timeline()
        if not render:
            return  # the caller draws everything next
        if self.history.follow:
            self._render_soon()
        else:
            self._render_status()
            if self.source.state != "running":
                # Later firings (param_grad) change what the explain pane says.
                self.lower.refresh_explain()

    def _grow_timeline(self) -> None:
        self._timeline_behind = False
        self.timeline.grow()

    def on_state_changed(self, message: StateChanged) -> None:
        self.source.set_state(message.state)
        if message.state == "running" and self._stepping:
            # A step set the model going: nothing to show until it pauses again (one
            # render per step, not one for each state it passes through); the status
            # line says "running" only if the step takes a while.
            self.set_timer(RUNNING_REDRAW, self._status_if_running)
            return
        # Everything the worker sent before this state is queued already: take it now
        # (drawn below, once).
        self._drain(render=False)
        stepped = self._stepping
        if message.state != "running":
            self._stepping = False
        self.search_run_ended(message.state)
        stop = self.source.stop if message.state == "paused" else None
        if message.state == "paused" and stop is None and not stepped and self.source.break_on_backward:
            latest = self.history.events[-1] if self.history.events else None
            if latest is not None and latest.phase == "backward":
                self.backward_stops.add(latest.key)
        if stop is not None and stop.key not in self.stops:
            self.stops[stop.key] = stop
            if stop.breakpoint.kind in ("nonfinite", "threshold") and not stepped:
                self.call_after_refresh(self.action_pane, "explain")  # where it was born
        if message.state == "paused" and self._queued_steps and self.history.at_latest:
            # `n` held down: this firing is passed at once; the screen is drawn for the
            # last of the steps asked (each key still moves one firing).
            self._queued_steps -= 1
            self._stepping = True
            self.source.step()
            return
        if message.state in ("finished", "failed") and not self._summary_shown:
            self._summary_shown = True
            if message.state == "finished":
                self.notify(self.summary(), title="run finished", timeout=4, markup=False)
        self._render_current()

    def _recorded_stop(self, event: Event | None) -> None:
        """A saved run that stopped at a NaN/Inf (`trace --stop-at-nonfinite --save`, a
        guard's file): opened there with the stop's explanation, as the live stop had it."""
        if event is None:
            return
        bp = Breakpoint.nonfinite()
        reason = bp.check(event)
        if reason is not None:
            self.stops[event.key] = Stop(event.index, bp, reason, event.sub)
            # The lower panes may be composed again for the terminal's size first: the tab to
            # open is set for that composition, and revealed in this one if it stays.
            self.lower.active = self.lower.side_active = "explain"
            self.call_after_refresh(self._reveal_if_there, "explain")

    def _reveal_if_there(self, name: str) -> None:
        if self.lower.query(f"#{name}"):
            self.action_pane(name)

    def _status_if_running(self) -> None:
        if self.source.state == "running":
            self._render_status()

    def _render_soon(self) -> None:
        if self.source.state != "running":
            self._render_current()
        elif self._redraw_timer is None:
            self._redraw_timer = self.set_timer(self._redraw_gap, self._redraw)

    def _redraw(self) -> None:
        self._redraw_timer = None
        now = time.monotonic()
        if self.source.state != "running":
            return  # the change of state has drawn everything already
        # No other redraw is timed until this one is on the screen and its cost known.
        self._redraw_timer = _MEASURING
        self.call_after_refresh(self._redrawn, now)
        self._grow_timeline()
        if not self.history.follow:
            self._render_status()
        elif now - self._panes_drawn_at >= RUNNING_PANES:
            self._render_current()
        else:
            self.timeline.show(self.history.cursor)
            self._render_status()
            # An open overview catches up when the stream stops (e.g. inside a long forward):
            # once, RUNNING_PANES after the panes were last drawn.
            if self._overview_timer is None and any(isinstance(s, OverviewScreen) for s in self.screen_stack):
                self._overview_timer = self.set_timer(max(0.0, self._panes_drawn_at + RUNNING_PANES - now), self._overview_catch_up)

    def _redrawn(self, started: float) -> None:
        """A redraw while streaming is on the screen: the next waits long enough that
        drawing takes at most STREAMING_UI_SHARE of the time."""
        cost = time.monotonic() - started
        self._redraw_gap = max(RUNNING_REDRAW, cost * (1 - STREAMING_UI_SHARE) / STREAMING_UI_SHARE)
        if self._redraw_timer is _MEASURING:
            self._redraw_timer = None
            if self._timeline_behind:  # firings came meanwhile
                self._render_soon()

    def _overview_catch_up(self) -> None:
        self._overview_timer = None
        if self.source.state == "running" and time.monotonic() - self._panes_drawn_at >= RUNNING_PANES:
            self._sync_overview()

    # -- rendering -----------------------------------------------------------------------
    @property
    def current(self) -> Event | None:
        return self.history.current

    @property
    def state(self) -> str:
        return self.source.state

    def _render_later(self) -> None:
        """Draw the current firing once the messages already queued are handled: keys of a
        burst (a held-down `N`) each move the cursor, and the screen is drawn once, for the
        last (a draw for each was most of the time of each)."""
        if not self._render_pending:
            self._render_pending = True
            self.call_later(self._render_if_pending)

    def _render_if_pending(self) -> None:
        if self._render_pending:
            self._render_current()

    def _render_current(self) -> None:
        self._render_pending = False
        self._panes_drawn_at = time.monotonic()
        history = self.history
        event = history.current
        streaming = self.source.state == "running" and history.follow
        if not streaming:  # marks on a big tree cost a relayout: not while streaming
            self._render_tree(event)
        self.timeline.show(history.cursor)
        self.lower.show(event, streaming=streaming)
        self._render_watches(streaming)
        self._render_status()
        self._sync_overview()
        self._refresh_bindings_if_changed()
        if event is not None and event.hook == "error" and not self._error_shown:
            self._error_shown = True
            # After the panes have been painted on this firing, so that they show it
            # behind the modal.
            self.call_after_refresh(self.action_show_error)

    def _render_tree(self, event: Event | None) -> None:
        history = self.history
        tree = self.module_tree
        breakpoints = self._breakpoint_modules()
        if event is None:
            self._tree_marked = None
            tree.update_marks(None, breakpoints, lambda m: False)
            return
        phase, cursor = event.phase, history.cursor
        # Only the marks that can differ from the last ones drawn: the modules first fired
        # between the two cursors (same phase), the two current ones, the breakpoints toggled.
        changed = None
        last = self._tree_marked
        if last is not None and last[0] == phase:
            low, high = sorted((last[1], cursor))
            changed = {*history.first_fired_between(phase, low, high), last[2], event.module, *(last[3] ^ breakpoints)}
        self._tree_marked = (phase, cursor, event.module, breakpoints)
        tree.update_marks(event.module, breakpoints, lambda m: history.visited(m, phase, cursor), changed)
        if not tree.has_focus:
            tree.show_module(event.module)

    GATED = ("step", "search_next", "search_previous", "resume", "back", "first", "latest", "show_error", "slice", "outer_slice", "step_into", "finish", "jump")

    @on(FiringChosen)
    def _firing_chosen(self, message: FiringChosen) -> None:
        self.goto(message.position, follow=False)

    def _refresh_bindings_if_changed(self) -> None:
        """The footer greys out what is unavailable; refreshing it costs a layout, so only
        when availability changed."""
        state = tuple(self.available(action) for action in self.GATED)
        if state != self._bindings_state:
            self._bindings_state = state
            self.refresh_bindings()

    def _render_status(self) -> None:
        self.status_line.show(self._status_info())

    def _status_info(self) -> StatusInfo:
        history = self.history
        state = self.source.state
        done = state in ("finished", "failed", "quit") or (not self.source.live and history.at_latest)
        return StatusInfo(
            state=state,
            event=history.current,
            position=history.shown_ordinal(history.cursor),
            total=history.shown_total,
            more_coming=self.source.can_advance,
            loss=self.info.loss,
            summary=self.summary(with_time=False) if done and history.at_latest else "",
            wall_time=self.source.wall_time if self.show_timings else None,
            breakpoints=tuple(sorted(self._breakpoint_modules())),
            value_breakpoints=tuple(bp.label for bp in self.source.breakpoints if bp.kind not in ("module", "user_hook")),
            stop=self.stops.get(history.current.key) if history.current is not None else None,
            search=self.search_status(),
            break_on_backward=self.source.break_on_backward,
            at_backward_stop=history.current is not None and history.current.key in self.backward_stops,
            against=self.against.ranks_text if self.against is not None else "",
        )

    def _breakpoint_modules(self) -> set[str]:
        return {bp.module for bp in self.source.breakpoints if bp.kind == "module"}

    def summary(self, with_time: bool = True) -> str:
        """Totals of the run: firings per phase, modules, and (live, unless hidden) wall time."""
        per_phase = self.history.shown_per_phase()  # what the timeline shows (legacy firings when L shows them)
        phases = " + ".join(f"{n} {phase}" for phase, n in per_phase.items()) or "0"
        modules = len(self.info.modules)
        text = f"{phases} firings, {modules} module{'' if modules == 1 else 's'}"
        if with_time and self.show_timings and self.source.wall_time is not None:
            text += f", ran {self.source.wall_time:.2f} s"
        return text

    # -- legacy firings --------------------------------------------------------------------
    def action_legacy(self) -> None:
        self.set_legacy_shown(not self.legacy_shown)

    def set_legacy_shown(self, shown: bool) -> None:
        if not self.source.records_legacy:
            self.notify("this run does not record legacy firings: open the model with --legacy", title="legacy")
            return
        self.legacy_shown = shown
        hidden = set(firing.hidden_kinds(shown))
        history = self.history
        history.hidden.clear()
        history.hidden.update(hidden)  # LowerPanes.hidden is the same set
        self.source.set_skipped(hidden)
        self.timeline.set_hidden(hidden)
        if self.search is not None:
            self.search.rescan()
            self.timeline.set_search(self.search)
        current = history.current
        if current is not None and not history.visible(history.cursor):
            previous = history.next_visible(history.cursor, -1)
            if previous is not None:
                history.move(previous)
        self.lower.refresh_explain()
        self._render_current()
        self.notify(f"legacy register_backward_hook firings {'shown' if shown else 'hidden'}", title="legacy", timeout=2)

    # -- breakpoints ---------------------------------------------------------------------
    def selected_module(self) -> str | None:
        tree = self.module_tree
        if tree.has_focus and tree.selected_module is not None:
            return tree.selected_module
        event = self.history.current
        return event.module if event is not None else tree.selected_module

    def action_breakpoint(self) -> None:
        module = self.selected_module()
        if module is None:
            return
        self.source.toggle_breakpoint(module)
        self._render_current()

    def action_user_hooks(self) -> None:
        breaks = {bp.user_hook for bp in self.source.breakpoints if bp.kind == "user_hook"}
        hooks = self.source.user_hooks(self.history.events)
        self.push_screen(UserHooksScreen(hooks, self.history.events, breaks, self.source.toggle_user_hook_breakpoint))

    def action_break_nonfinite(self) -> None:
        """Toggle the non-finite breakpoint (any NaN or Inf, any tensor, any firing)."""
        on = self.source.breakpoint_list.toggle(Breakpoint.nonfinite())
        where = ""
        if on and self.source.live and self.source.state != "finished":
            where = " (the forward line that made a bad value is known from here on)"
        self.notify(f"non-finite breakpoint {'on: c stops at the first NaN/Inf' + where if on else 'off'}",
                    title="breakpoint", markup=False)
        self._render_current()

    def action_breakpoints(self) -> None:
        if isinstance(self.screen, BreakpointsScreen):
            return
        self.push_screen(BreakpointsScreen(self.source.breakpoint_list, self.source.live, self.source.break_on_backward),
                         lambda _: self._render_current())

    def action_console(self) -> None:
        event = self.current
        if event is None or isinstance(self.screen, ConsoleScreen):
            return
        paused = self.source.paused_at(event)
        run_names = self.source.console_names()
        also = f"; the run's: {', '.join(run_names)}" if run_names else ""
        if paused:
            where = f"at #{event.number} ({event.module or '(root)'} {event.hook}), paused: the names are the live objects ({', '.join(CONDITION_NAMES)}){also}"
        elif self.source.live:
            where = f"at #{event.number}, a past firing: its records (event, tensors){also}"
        else:
            where = f"at #{event.number} of a recorded trace: only its records (event, tensors)"
        self.push_screen(ConsoleScreen(visible(where), lambda text: self.source.evaluate(text, event, self.console_names),
                                       self.console_history, self.console_results))

    def action_save(self) -> None:
        if isinstance(self.screen, SaveScreen):
            return
        # The firings shown now are saved (a run going on may add more before the answer),
        # counted from the history's indexes: a packed history is unpacked only when the
        # file is written.
        history = self.history
        upto, hidden = len(history), frozenset(history.hidden)
        self.push_screen(SaveScreen(_unused_name(), history.shown_total),
                         lambda path: None if path is None else self._save_to(path, history.shown_firings(upto, hidden)))

    def _save_to(self, path: str, events: list[Event]) -> None:
        try:
            write_trace(path, self.info, events)
        except (TraceFileError, OSError) as exc:
            why = str(exc) if isinstance(exc, TraceFileError) else f"{path}: {exc.strerror or exc}"
            self.notify(f"not saved: {why}", title="save", severity="error", markup=False)
            return
        self.notify(f"saved {len(events)} firing{'' if len(events) == 1 else 's'}: hooktui view {path}", title="save", markup=False)

    def action_goto(self) -> None:
        if isinstance(self.screen, GotoScreen):
            return
        events = self.history.events
        self.push_screen(GotoScreen(events[-1].number if events else None),
                         lambda index: None if index is None else self.go_to_index(index))

    def action_break_backward(self) -> None:
        on = self.source.break_on_backward = not self.source.break_on_backward
        self.notify("break when backward starts: " + ("on (c stops at the first backward firing; B again turns it off)" if on else "off"),
                    title="breakpoint", markup=False)
        self._render_status()

    # -- panes ---------------------------------------------------------------------------
    def action_filter(self) -> None:
        self.query_one(FilterInput).open()

    def action_clear_filter(self) -> None:
        """Escape clears the timeline's filter wherever the focus is (the box's own escape
        works only while it has focus)."""
        box = self.query_one(FilterInput)
        if box.value or box.has_class("-open"):
            box.action_clear_filter()

    def action_zoom(self) -> None:
        screen = self.screen
        if screen.maximized is not None:
            screen.minimize()
            return
        target = self.focused or self.timeline
        if not screen.maximize(target):
            self.notify("nothing to zoom here: tab to a pane first", title="zoom", markup=False)

    @on(Input.Changed, "#filter")
    def _filter_changed(self, message: Input.Changed) -> None:
        self.timeline.set_filter(message.value)

    @on(SearchBar.Submitted)
    def _search_submitted(self, message: SearchBar.Submitted) -> None:
        self.search_submitted(message.text)

    @on(FilterInput.Closed)
    def _filter_closed(self) -> None:
        self.timeline.focus()

    def action_pane(self, name: str) -> None:
        # Focused once it is on screen: at once, or once the panes composed again at a
        # resize are mounted (reveal).
        self.lower.reveal(name, then=self._focus_pane)

    def _focus_pane(self, pane: Widget) -> None:
        found = pane.query("DataTable, Tree, ValuesGrid, TensorTable")
        target = found.first() if found else pane
        self.call_after_refresh(target.focus)

    def action_slice(self, delta: int) -> None:
        self.lower.step_slice(delta)

    def action_outer_slice(self, delta: int) -> None:
        self.lower.step_slice(delta, outer=True)

    # -- screens -------------------------------------------------------------------------
    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen(key_help(self)))

    def action_overview(self) -> None:
        if isinstance(self.screen, OverviewScreen):
            self.screen.dismiss(None)
            return
        self.push_screen(OverviewScreen(self.history.events, self.against.marks if self.against is not None else None))
        self.call_after_refresh(self._sync_overview)

    def _sync_overview(self) -> None:
        """The overview, if open, takes in new firings and the current one."""
        for screen in self.screen_stack:
            if isinstance(screen, OverviewScreen):
                screen.sync(self.history.current, self._status_info())

    def action_show_error(self) -> None:
        error = self.history.error
        if error is None:
            self.notify("the model has raised no error" + (" so far" if self.source.can_advance else ""), title="error", markup=False)
            return
        if isinstance(self.screen, ErrorScreen):
            return
        position = self.history.error_position
        last = self.history.events[position - 1] if position > 0 else None
        self.push_screen(ErrorScreen(error, last))

    def action_command_palette(self) -> None:
        """Textual's palette, whose page keys survive a terminal too small for its list
        (screens/palette.py)."""
        if self.use_command_palette and not Palette.is_open(self):
            self.push_screen(Palette(id="--command-palette"))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        return palette_commands(self, screen, super().get_system_commands(screen))

    # -- notices -----------------------------------------------------------------------------
    def notify(self, message: str, *, title: str = "", severity="information", timeout: float | None = None,
               markup: bool = True) -> None:
        """While the panes are tabs (below 120x32), a notice takes the footer's row for its time
        instead of a toast over the panes (widgets/notice.py), also while a modal screen is open."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)
        plain = Text.from_markup(message).plain if markup else message
        self.notices_said.append(SaidNotice(time.strftime("%H:%M:%S"), title, plain, severity))
        # Thread-safe as App.notify is (the model's thread notifies too): said on the app's.
        self.post_message(NoticeMade(message, title, severity, timeout, markup))

    async def on_notice_made(self, notice: NoticeMade) -> None:
        if self.has_class(NOTICES_IN_LINE) and self.is_running and self.screen_stack:
            # The last row, whichever screen is open (a modal too: widgets/notice.py).
            await say_in_line(self, notice.message, title=notice.title, severity=notice.severity, timeout=notice.timeout,
                              markup=notice.markup)

    def clear_notifications(self) -> None:
        super().clear_notifications()
        for line in self.query(NoticeLine):
            line.clear()

    # -- the model's output ----------------------------------------------------------------
    def on_print(self, event: events.Print) -> None:
        if not self.model_output:
            self.notify("the model is printing: its output is shown when hooktui exits", title="output", timeout=3)
        self.model_output.append(event.text)

    # -- quitting ------------------------------------------------------------------------
    async def action_quit(self) -> None:
        self.source.quit()
        self.exit()

    def action_restart(self) -> None:
        if self.restart is None:
            why = "a recorded trace has no model to run" if not self.source.live else "hooktui.debug's step is your program's"
            self.notify(f"R restarts `hooktui MODEL.py` only: {why}", title="restart", markup=False)
            return
        self.restart_requested = True
        self.source.quit()
        self.exit()

    def get_driver_class(self):
        driver = super().get_driver_class()
        if driver.__name__ == "LinuxDriver":  # not TEXTUAL_DRIVER's (serve's web driver), nor Windows'
            from .terminal_driver import TerminalDriver

            return TerminalDriver
        if driver.__name__ == "WebDriver":  # behind `hooktui serve`: ends with its server
            from .served_driver import ServedDriver

            return ServedDriver
        return driver

    def _exit_on_signal(self, signum: int) -> None:
        self.source.quit()
        self.exit(return_code=128 + signum)

    def run(self, *args, **kwargs):
        """Textual's run; a signal the event loop never got to answer (ending.py) ends
        it too, with its exit status, the terminal given back."""
        from .model_stdin import kept_from_the_model

        try:
            if self.exit_on_signals and self._ending is None:  # a signal while Textual starts is the app's too
                self._ending = Ending(EXIT_SIGNALS, self._exit_on_signal)
                self._ending.install()
            # The terminal's keys are the app's: not the model's input() or breakpoint().
            with kept_from_the_model(self) if not kwargs.get("headless") else contextlib.nullcontext():
                return super().run(*args, **kwargs)
        except EndedBySignal:
            ending = self._ending
            if ending is None or ending.signum is None:
                raise
            self.source.quit()
            self._exit = True
            self._return_code = 128 + ending.signum
            give_back_terminal(self)
            return None
        finally:
            if self._ending is not None:
                self._ending.closed()

    def on_unmount(self) -> None:
        # Tell the model's thread to stop, without waiting: a model inside a long forward
        # only notices at its next firing, and the terminal must come back first. The
        # process itself ends at once whatever the model does (hooktui.ui.process).
        self.source.quit()
        if self._ending is not None:  # its watchdog thread ends and lets go of the app
            self._ending.closed()


def _unused_name() -> str:
    """hooktui-session-<pid>-<n>.jsonl in the current folder, a name no file has yet."""
    n = 1
    while os.path.exists(name := f"hooktui-session-{os.getpid()}-{n}.jsonl"):
        n += 1
    return name
