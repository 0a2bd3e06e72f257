"""Watch expressions in the app (`W`): the list, the Watch pane, and the values at every
firing shown. Mixed into HooktuiApp; the evaluating is engine/analysis/watch.py's.

The watches are evaluated each time the panes show a firing at rest (a step, a stop, a move
in the history), never while a run streams past firings: the values of a firing gone by
would say nothing. They are the app's, and `R` hands them to the next run (commands/open.py).
"""

from __future__ import annotations

from ..engine.analysis.watch import WatchValue, evaluate_watches
from .screens.watch import WatchScreen
from .widgets.watch import WatchPane


class WatchActions:
    def action_watch(self) -> None:
        """Add a watch expression (and show the Watch pane)."""
        if isinstance(self.screen, WatchScreen):
            return
        self.push_screen(WatchScreen(self._watch_note()), self._add_watch)

    async def _add_watch(self, expression: str | None) -> None:
        if expression is not None and expression not in self.watches:
            self.watches.append(expression)
        await self.show_watch_pane()
        self._render_watches()

    async def show_watch_pane(self) -> None:
        lower = self.lower
        if not lower.watching:  # the tab is composed now, once
            lower.set_reactive(type(lower).watching, True)
            await lower.recompose()
        self.action_pane("watch")

    def on_watch_pane_removed(self, message: WatchPane.Removed) -> None:
        if 0 <= message.position < len(self.watches):
            del self.watches[message.position]
        self._render_watches()

    def _render_watches(self, streaming: bool = False) -> None:
        """The watches' values at the firing on screen (none while a run streams)."""
        lower = self.lower
        if not lower.watching:
            return
        event = self.history.current
        if streaming or event is None:
            why = "the run is going: the watches are evaluated where it pauses" if event is not None else "no firing yet"
            lower.show_watches([WatchValue(e, "…") for e in self.watches], why)
            return
        live = self.source.live_firing(event)
        values = evaluate_watches(self.watches, event, live, run_names=self.source.console_names(),
                                  past=live is None and self.source.live)
        lower.show_watches(values, self._watch_note())

    def _watch_note(self) -> str:
        event = self.history.current
        if event is None:
            return "no firing yet"
        at = f"#{event.number} {event.module or '(root)'} {event.hook}"
        if not self.source.live:
            return f"{at}: a recorded trace has no live objects, only its records (event, tensors)"
        if self.source.live_firing(event) is None:
            return f"{at}: a past firing, its live objects gone: its records (event, tensors) and the run's names"
        return f"{at}: live, under torch.no_grad · W adds · d removes"
