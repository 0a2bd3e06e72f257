"""The hooktui app: panes over a Source of firings (sources.py), keys to move through them.

Data flows one way: the source hands over Event records, the History keeps them and the
cursor, and every pane renders the record under the cursor. A live model and a recorded
trace differ only in whether stepping past the last firing can ask the model for more.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from textual import events, on
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.keys import format_key
from textual.markup import escape as escape_markup
from textual.screen import Screen
from textual.widgets import Footer, Input

from ..engine.records import Event, TraceInfo
from .history import History
from .messages import EventsReady, FiringChosen, StateChanged
from .paths import display_path
from .screens.error import ErrorScreen
from .screens.help import HelpScreen
from .screens.user_hooks import UserHooksScreen, modules_with_user_hooks
from .sources import LiveSource, RecordedSource, Source
from .widgets.filter_input import FilterInput
from .widgets.lower import LowerPanes
from .widgets.module_tree import ModuleTree
from .widgets.status import StatusInfo, StatusLine
from .widgets.timeline import Timeline
from .widgets.values import ValuesPane

if TYPE_CHECKING:
    from ..engine.session import Session

# While the model runs freely, the timeline and status follow at most this often, and the
# heavier panes (tree marks, tensors, values, autograd) at most every RUNNING_PANES seconds:
# the UI thread shares the GIL with the model's.
RUNNING_REDRAW = 0.1
RUNNING_PANES = 0.5
RUNNING_DRAIN = 0.05


def _key_name(key: str) -> str:
    return key.upper() if key[:1] == "f" and key[1:].isdigit() else format_key(key)


class HooktuiApp(App):
    CSS_PATH = "app.tcss"
    TITLE = "hooktui"

    BINDINGS = [
        Binding("n,space,f10", "step", "Next", id="hooktui.next"),
        Binding("s", "step_into", "Into", id="hooktui.step_into"),
        Binding("f", "finish", "Finish", id="hooktui.finish"),
        Binding("c,f5", "resume", "Continue", id="hooktui.continue"),
        Binding("N,p", "back", "Back", id="hooktui.back"),
        Binding("b,f9", "breakpoint", "Break", id="hooktui.breakpoint"),
        Binding("B", "break_backward", "Break bwd", show=False, id="hooktui.break_backward"),
        Binding("g", "first", "First", show=False, id="hooktui.first"),
        Binding("G", "latest", "Latest", show=False, id="hooktui.latest"),
        Binding("j", "jump", "Fwd↔bwd", show=False, id="hooktui.jump"),
        Binding("L", "legacy", "Legacy", show=False, id="hooktui.legacy"),
        Binding("H", "user_hooks", "Your hooks", show=False, id="hooktui.user_hooks"),
        Binding("slash", "filter", "Filter", show=False, id="hooktui.filter"),
        Binding("t", "pane('tensors')", "Tensors pane", show=False, id="hooktui.pane.tensors"),
        Binding("x", "pane('explain')", "Explain pane", show=False, id="hooktui.pane.explain"),
        Binding("v", "pane('values')", "Values pane", show=False, id="hooktui.pane.values"),
        Binding("a", "pane('autograd')", "Autograd pane", show=False, id="hooktui.pane.autograd"),
        Binding("o", "pane('source')", "Source pane", show=False, id="hooktui.pane.source"),
        Binding("left_square_bracket", "slice(-1)", "Previous slice", show=False, id="hooktui.slice.previous"),
        Binding("right_square_bracket", "slice(1)", "Next slice", show=False, id="hooktui.slice.next"),
        Binding("left_curly_bracket", "outer_slice(-1)", "Previous outer slice", show=False, id="hooktui.slice.outer_previous"),
        Binding("right_curly_bracket", "outer_slice(1)", "Next outer slice", show=False, id="hooktui.slice.outer_next"),
        Binding("e", "show_error", "Show the error", show=False, id="hooktui.error"),
        Binding("question_mark,f1", "help", "Help", id="hooktui.help"),
        Binding("q", "quit", "Quit", id="hooktui.quit"),
    ]

    # Descriptions for the help screen and the command palette, in BINDINGS order.
    HELP = {
        "step": "next firing (walks back up the history first)",
        "step_into": "step into the autograd nodes of this module's backward (at backward_pre; else next)",
        "finish": "finish: run to the backward firing of this module call",
        "resume": "continue to the next breakpoint or the end",
        "back": "previous firing (history)",
        "breakpoint": "toggle a breakpoint on the module (tree selection, else the current one)",
        "break_backward": "toggle a break when backward starts",
        "first": "first firing",
        "latest": "latest firing",
        "jump": "jump between a backward firing and its forward firing (and back)",
        "legacy": "show or hide the legacy register_backward_hook firings",
        "user_hooks": "your hooks: every hook the model registered itself, hit counts, b to break on one",
        "filter": "filter the timeline by module name (escape clears)",
        "pane('tensors')": "show the tensors pane",
        "pane('explain')": "show the explain pane (what this firing means)",
        "pane('values')": "show the values pane",
        "pane('autograd')": "show the autograd pane",
        "pane('source')": "show the source pane",
        "slice(-1)": "values: previous 2-D slice",
        "slice(1)": "values: next 2-D slice",
        "outer_slice(-1)": "values: previous index of the outermost dim",
        "outer_slice(1)": "values: next index of the outermost dim",
        "show_error": "show the model's exception again",
        "help": "this help",
        "quit": "quit (stops the model at once)",
    }

    def __init__(
        self,
        session: Session | None = None,
        recorded: tuple[TraceInfo, list[Event]] | None = None,
        source_path: str | None = None,
        sources: Mapping[str, Mapping[int, str]] | None = None,
        *,
        show_timings: bool = True,
        exit_on_signals: bool = False,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        if (session is None) == (recorded is None):
            raise ValueError("HooktuiApp needs a session or a recorded (info, events), not both")
        self.session = session
        self.source: Source = LiveSource(session) if session is not None else RecordedSource(*recorded, sources=sources)
        self.source_path = source_path
        self.show_timings = show_timings
        # SIGTERM / SIGHUP end the app (terminal restored) instead of killing the process
        # with the terminal still in raw mode; only for the process's own app (hooktui.ui.process).
        self.exit_on_signals = exit_on_signals
        # What the model printed while the app owned the terminal; written out after it.
        self.model_output: list[str] = []
        self.history = History()
        self.info = self.source.info
        self._stepping = False  # a step was asked of the model and has not paused yet
        self._queued_steps = 0
        self._redraw_timer = None
        self._drain_timer = None
        self._panes_drawn_at = 0.0
        self._bindings_state: tuple = ()
        self._error_shown = False
        self._summary_shown = False
        self._jumped_from: tuple[int, int] | None = None  # (from, to) of the last `j`
        # Legacy firings: shown when the session pauses at them (`hooktui --legacy`) or
        # a recorded trace has them; `L` toggles.
        if session is not None:
            self.legacy_shown = session.legacy and "legacy_backward" not in session.gate.skip_hooks
        else:
            self.legacy_shown = True
        self.history.hidden = set() if self.legacy_shown else {"legacy_backward"}

    # -- layout ------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        with Horizontal(id="top"):
            yield ModuleTree(self.info, id="tree")
            with Vertical(id="timeline-box"):
                yield FilterInput(placeholder="filter by module name (glob ok), escape clears", id="filter")
                width = max((len(m.name) for m in self.info.modules), default=6)
                yield Timeline(self.history, module_width=width, hidden=self.history.hidden, id="timeline")
        lower = LowerPanes(self.history.events, self.info, self.source.source_lines, id="lower")
        lower.hidden = self.history.hidden
        yield lower
        yield Footer(compact=True)

    def on_mount(self) -> None:
        if self.exit_on_signals:
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGTERM, signal.SIGHUP):
                loop.add_signal_handler(signum, self._exit_on_signal, signum)
        # The model's print() would be lost behind the app: keep it for after.
        self.begin_capture_print(self, stdout=True, stderr=True)
        label = self.info.model
        self.title = f"hooktui: {display_path(label) if label.endswith('.py') else label}"
        known = self.source.start(self)
        self.history.extend(known)
        if known:  # a recorded trace opens at its first firing
            self.history.move(0)
            self.history.follow = False
        self.query_one(Timeline).grow()
        self.query_one(ModuleTree).mark_user_hooks(modules_with_user_hooks(self.source.user_hooks(self.history.events)))
        self._fit_layout()
        self.query_one(Timeline).focus()
        self._render_current()

    def _fit_layout(self) -> None:
        self.query_one(LowerPanes).fit(self.size)

    @on(LowerPanes.LayoutChanged)
    def _layout_changed(self, message: LowerPanes.LayoutChanged) -> None:
        self.query_one(Footer).compact = not message.wide
        self.query_one("#top").set_class(message.wide, "-wide")

    # -- the source's messages ------------------------------------------------------------
    def on_events_ready(self, message: EventsReady) -> None:
        if self.source.state == "running":
            # Streaming: let firings pile up for a moment, so that neither thread wakes
            # the other once per firing (they share the GIL).
            if self._drain_timer is None:
                self._drain_timer = self.set_timer(RUNNING_DRAIN, self._drain)
        else:
            self._drain()

    def _drain(self) -> None:
        if self._drain_timer is not None:
            self._drain_timer.stop()
            self._drain_timer = None
        events = self.source.drain()
        if not events:
            return
        self.history.extend(events)
        self.query_one(Timeline).grow()
        if self.history.follow:
            self._render_soon()
        else:
            self._render_status()
            if self.source.state != "running":
                # Later firings (param_grad) change what the explain pane says.
                self.query_one(LowerPanes).refresh_explain()

    def on_state_changed(self, message: StateChanged) -> None:
        self.source.set_state(message.state)
        # Everything the worker sent before this state is queued already: take it now.
        self._drain()
        if message.state != "running":
            self._stepping = False
        if message.state == "paused" and self._queued_steps and self.history.at_latest:
            self._queued_steps -= 1
            self._stepping = True
            self.source.step()
        if message.state in ("finished", "failed") and not self._summary_shown:
            self._summary_shown = True
            if message.state == "finished":
                self.notify(self.summary(), title="run finished", timeout=4, markup=False)
        self._render_current()

    def _render_soon(self) -> None:
        if self.source.state != "running":
            self._render_current()
        elif self._redraw_timer is None:
            self._redraw_timer = self.set_timer(RUNNING_REDRAW, self._redraw)

    def _redraw(self) -> None:
        self._redraw_timer = None
        now = time.monotonic()
        if self.source.state != "running" or now - self._panes_drawn_at >= RUNNING_PANES:
            self._render_current()
        else:
            self.query_one(Timeline).show(self.history.cursor)
            self._render_status()

    # -- rendering -----------------------------------------------------------------------
    @property
    def current(self) -> Event | None:
        return self.history.current

    @property
    def state(self) -> str:
        return self.source.state

    def _render_current(self) -> None:
        self._panes_drawn_at = time.monotonic()
        history = self.history
        event = history.current
        streaming = self.source.state == "running" and history.follow
        if not streaming:  # marks on a big tree cost a relayout: not while streaming
            self._render_tree(event)
        self.query_one(Timeline).show(history.cursor)
        self.query_one(LowerPanes).show(event)
        self._render_status()
        self._refresh_bindings_if_changed()
        if event is not None and event.hook == "error" and not self._error_shown:
            self._error_shown = True
            # After the panes have been painted on this firing, so that they show it
            # behind the modal.
            self.call_after_refresh(self.action_show_error)

    def _render_tree(self, event: Event | None) -> None:
        history = self.history
        tree = self.query_one(ModuleTree)
        if event is None:
            tree.update_marks(None, self._breakpoint_modules(), lambda m: False)
            return
        phase = event.phase
        tree.update_marks(event.module, self._breakpoint_modules(), lambda m: history.visited(m, phase, history.cursor))
        if not tree.has_focus:
            tree.show_module(event.module)

    GATED = ("step", "resume", "back", "first", "latest", "show_error", "slice", "outer_slice", "step_into", "finish", "jump")

    def _refresh_bindings_if_changed(self) -> None:
        """The footer greys out what is unavailable; refreshing it costs a layout, so only
        when availability changed."""
        state = tuple(self.available(action) for action in self.GATED)
        if state != self._bindings_state:
            self._bindings_state = state
            self.refresh_bindings()

    def _render_status(self) -> None:
        history = self.history
        state = self.source.state
        done = state in ("finished", "failed", "quit") or (not self.source.live and history.at_latest)
        self.query_one(StatusLine).show(
            StatusInfo(
                state=state,
                event=history.current,
                position=history.cursor,
                total=len(history),
                more_coming=self.source.can_advance,
                loss=self.info.loss,
                summary=self.summary(with_time=False) if done and history.at_latest else "",
                wall_time=self.source.wall_time if self.show_timings else None,
                breakpoints=tuple(sorted(self._breakpoint_modules())),
                break_on_backward=self.source.break_on_backward,
            )
        )

    def _breakpoint_modules(self) -> set[str]:
        return {bp.module for bp in self.source.breakpoints if bp.user_hook is None}

    def summary(self, with_time: bool = True) -> str:
        """Totals of the run: firings per phase, modules, and (live, unless hidden) wall time."""
        per_phase = self.history.per_phase
        phases = " + ".join(f"{n} {phase}" for phase, n in per_phase.items()) or "0"
        text = f"{phases} firings, {len(self.info.modules)} modules"
        if with_time and self.show_timings and self.source.wall_time is not None:
            text += f", ran {self.source.wall_time:.2f} s"
        return text

    # -- moving --------------------------------------------------------------------------
    def goto(self, position: int, follow: bool | None = None) -> None:
        history = self.history
        history.move(position)
        if follow is not None:
            history.follow = follow and history.at_latest
        self._render_current()

    @on(FiringChosen)
    def _firing_chosen(self, message: FiringChosen) -> None:
        self.goto(message.position, follow=False)

    # Keys that say why when they cannot act (a disabled binding would do nothing, silently).
    EXPLAINED = ("jump", "show_error")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in self.EXPLAINED:
            return True
        return self.available(action)

    def available(self, action: str) -> bool | None:
        """True when `action` can act now; None greys it out (footer, command palette)."""
        history = self.history
        if action in ("step", "resume", "step_into"):
            return True if (not history.at_latest or self.source.can_advance) else None
        if action == "finish":
            event = history.current
            return True if event is not None and (self._backward_ahead(event) is not None or self.source.can_advance) else None
        if action == "jump":
            event = history.current
            back = self._jumped_from is not None and self._jumped_from[1] == history.cursor
            return True if back or (event is not None and event.forward_index is not None) else None
        if action in ("back", "first"):
            return True if history.next_visible(history.cursor, -1) is not None else None
        if action == "latest":
            return True if not history.at_latest else None
        if action == "show_error":
            return True if history.error is not None else None
        if action in ("slice", "outer_slice"):
            panes = self.query(ValuesPane) if self.is_mounted else []
            return True if any(p.slices > 1 for p in panes) else None
        return True

    def action_step(self) -> None:
        history = self.history
        if not history.at_latest:
            position = history.next_visible(history.cursor, 1)
            self.goto(position if position is not None else history.latest, follow=True)
            return
        if not self.source.can_advance:
            return
        history.follow = True
        if self._stepping or self.source.state == "running":
            if self._stepping:
                self._queued_steps += 1
            else:  # running freely (continue): pause at the next firing
                self._stepping = True
                self.source.step()
            return
        self._stepping = True
        self.source.step()

    def action_resume(self) -> None:
        history = self.history
        if not history.at_latest:
            stop = history.find_stop(self.source.breakpoints, self.source.break_on_backward)
            if stop is not None:
                self.goto(stop, follow=False)
                return
            self.goto(history.latest, follow=True)
        if self.source.can_advance:
            history.follow = True
            self._queued_steps = 0
            self._stepping = False
            self.source.resume()

    def action_back(self) -> None:
        position = self.history.next_visible(self.history.cursor, -1)
        if position is not None:
            self.goto(position, follow=False)

    def action_first(self) -> None:
        position = 0 if self.history.visible(0) else self.history.next_visible(0, 1)
        if self.history.events and position is not None:
            self.goto(position, follow=False)

    # -- autograd nodes, finish, forward <-> backward ---------------------------------------
    def _at_live_pause(self) -> bool:
        """The cursor is on the firing the model is paused in."""
        return self.source.live and self.source.state == "paused" and self.history.cursor == len(self.history) - 1

    def action_step_into(self) -> None:
        event = self.current
        if event is None or event.hook != "backward_pre" or not self._at_live_pause() or self._stepping:
            self.action_step()
            return
        self.history.follow = True
        self._stepping = True
        self.source.step_into()

    def _backward_ahead(self, event: Event) -> int | None:
        """Position of the backward firing of `event`'s module call, if known, after the cursor."""
        history = self.history
        for position in range(history.cursor + 1, len(history)):
            other = history.events[position]
            if other.hook == "backward" and other.module == event.module and other.call == event.call:
                return position
        return None

    def _backward_before(self, event: Event) -> int | None:
        for position in range(self.history.cursor, -1, -1):
            other = self.history.events[position]
            if other.hook == "backward" and other.module == event.module and other.call == event.call:
                return position
        return None

    def action_finish(self) -> None:
        event = self.current
        if event is None:
            return
        ahead = self._backward_ahead(event)
        if ahead is not None:
            self.goto(ahead, follow=False)
            return
        who = f"{event.module or '(root)'} call {event.call}"
        if event.phase == "backward" and event.hook != "backward_pre":
            before = self._backward_before(event)
            if before is not None:  # e.g. fired early: finishing would run to the end
                self.notify(f"the backward hook of {who} already fired, at #{before}", title="finish", markup=False)
                return
        if not self._at_live_pause() or self._stepping:
            self.notify(f"no backward firing of {who} ahead", title="finish", markup=False)
            return
        self.history.follow = True
        self._stepping = True
        self.source.finish()

    def action_jump(self) -> None:
        history = self.history
        if self._jumped_from is not None and self._jumped_from[1] == history.cursor:
            origin = self._jumped_from[0]
            self._jumped_from = None
            self.goto(origin, follow=origin >= history.latest)
            return
        event = self.current
        if event is None:
            return
        if event.forward_index is None:
            why = "a forward firing has no other side to jump to" if event.phase == "forward" else "this firing has no forward firing"
            self.notify(f"j jumps from a backward firing to its forward firing and back: {why}", title="jump", markup=False)
            return
        self._jumped_from = (history.cursor, event.forward_index)
        self.goto(event.forward_index, follow=False)

    # -- legacy firings --------------------------------------------------------------------
    def action_legacy(self) -> None:
        self.set_legacy_shown(not self.legacy_shown)

    def set_legacy_shown(self, shown: bool) -> None:
        if self.session is not None and not self.session.legacy:
            self.notify("this run does not record legacy firings: open the model with --legacy", title="legacy")
            return
        self.legacy_shown = shown
        hidden = set() if shown else {"legacy_backward"}
        history = self.history
        history.hidden.clear()
        history.hidden.update(hidden)  # LowerPanes.hidden is the same set
        self.source.set_skipped(hidden)
        self.query_one(Timeline).set_hidden(hidden)
        current = history.current
        if current is not None and not history.visible(history.cursor):
            previous = history.next_visible(history.cursor, -1)
            if previous is not None:
                history.move(previous)
        self.query_one(LowerPanes).refresh_explain()
        self._render_current()
        self.notify(f"legacy register_backward_hook firings {'shown' if shown else 'hidden'}", title="legacy", timeout=2)

    def action_latest(self) -> None:
        self.goto(self.history.latest, follow=True)

    # -- breakpoints ---------------------------------------------------------------------
    def selected_module(self) -> str | None:
        tree = self.query_one(ModuleTree)
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
        breaks = {bp.user_hook for bp in self.source.breakpoints if bp.user_hook is not None}
        hooks = self.source.user_hooks(self.history.events)
        self.push_screen(UserHooksScreen(hooks, self.history.events, breaks, self.source.toggle_user_hook_breakpoint))

    def action_break_backward(self) -> None:
        self.source.break_on_backward = not self.source.break_on_backward
        self._render_status()

    # -- panes ---------------------------------------------------------------------------
    def action_filter(self) -> None:
        self.query_one(FilterInput).open()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, message: Input.Changed) -> None:
        self.query_one(Timeline).set_filter(message.value)

    @on(FilterInput.Closed)
    def _filter_closed(self) -> None:
        self.query_one(Timeline).focus()

    def action_pane(self, name: str) -> None:
        pane = self.query_one(LowerPanes).reveal(name)
        target = pane.query("DataTable, Tree").first() if pane.query("DataTable, Tree") else pane
        self.call_after_refresh(target.focus)

    def action_slice(self, delta: int) -> None:
        self.query_one(LowerPanes).step_slice(delta)

    def action_outer_slice(self, delta: int) -> None:
        self.query_one(LowerPanes).step_slice(delta, outer=True)

    # -- screens -------------------------------------------------------------------------
    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen(self.key_help()))

    def key_help(self) -> list[tuple[str, str, str]]:
        """(keys, description, action) for every app binding, after any keymap."""
        bindings_map = self._bindings.copy()
        if self._keymap:
            bindings_map.apply_keymap(self._keymap)
        keys: dict[str, list[str]] = {}
        for key, bindings in bindings_map.key_to_bindings.items():
            for binding in bindings:
                names = keys.setdefault(binding.action, [])
                if key not in names:
                    names.append(key)
        out = []
        for action, description in self.HELP.items():
            if action in keys:
                out.append((", ".join(_key_name(k) for k in keys[action]), description, action))
        return out

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

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        for keys, description, action in self.key_help():
            name = action.partition("(")[0]
            if self.available(name) is not True:
                continue
            # The palette reads titles and help as markup: escape them (`[` is a key).
            title, help_text = escape_markup(f"{description[0].upper()}{description[1:]}"), escape_markup(f"key: {keys}")
            yield SystemCommand(title, help_text, lambda a=action: self.run_action(a))
        # Textual's own Quit would be a second one (ours above says what quitting does).
        yield from (command for command in super().get_system_commands(screen) if command.title != "Quit")

    # -- the model's output ----------------------------------------------------------------
    def on_print(self, event: events.Print) -> None:
        if not self.model_output:
            self.notify("the model is printing: its output is shown when hooktui exits", title="output", timeout=3)
        self.model_output.append(event.text)

    # -- quitting ------------------------------------------------------------------------
    async def action_quit(self) -> None:
        self.source.quit()
        self.exit()

    def _exit_on_signal(self, signum: int) -> None:
        self.source.quit()
        self.exit(return_code=128 + signum)

    def on_unmount(self) -> None:
        # Tell the model's thread to stop, without waiting: a model inside a long forward
        # only notices at its next firing, and the terminal must come back first. The
        # process itself ends at once whatever the model does (hooktui.ui.process).
        self.source.quit()
