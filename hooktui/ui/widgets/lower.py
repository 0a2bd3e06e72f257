"""The lower panes (tensors, explain, values, autograd, source; watch from the first `W`) and their layout.

Narrow terminals get one set of tabs; wide ones (WIDE and up) show the tensors across the
whole width, with the values beside tabs for explain, autograd and source below them. Switching
layout recomposes the panes from `event` and the chosen tensor, slice and tabs, which this
container keeps.

Only the panes on screen are drawn at a step: the others (every tab but one when narrow,
the side tabs not chosen when wide) are given the firing and drawn when they are shown (a
tab switched to, a layout composed again) or read (`pane`, the one way to a pane's content).
A step of the app costs what it shows, however many tabs there are."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import TabbedContent, TabPane

from ...engine.analysis.breakpoints import Stop
from ...engine.records.records import Event, TensorRecord, TraceInfo
from ..messages import TensorChosen
from .autograd import AutogradPane
from .explain import ExplainPane
from .source_view import LinesFor, SourceView, call_site
from .tensors import TensorsPane
from .values import ValuesPane
from .watch import WatchPane

PANES = ("tensors", "explain", "values", "autograd", "source")
SIDE = ("explain", "autograd", "source")  # the tabs beside the values when wide
# Terminal sizes from which the panes share the screen instead of being tabs.
WIDE = (120, 32)
# As tabs, the panes' rows: the Tensors tab fits its firing (between LOWER_MIN and the share
# the other tabs get: their text, grids and trees fill any room), and the tree and timeline
# above take the rest, at least TOP_MIN. LOWER_MIN (tab bar and its rule, the summary, the
# header, 4 tensors) keeps most steps from moving the split.
LOWER_MIN, LOWER_SHARE, TOP_MIN = 8, 0.6, 7
TABS = 2  # the tab bar and the rule under it
TITLES = {"tensors": "Tensors", "explain": "Explain", "values": "Values", "autograd": "Autograd", "source": "Source", "watch": "Watch"}
WATCH = "watch"  # the Watch pane: a last tab (beside the values when wide), once the user watches


class LowerPanes(Widget):
    DEFAULT_CSS = """
    LowerPanes { height: 1fr; }
    LowerPanes.-wide > TensorsPane { height: 2fr; min-height: 5; border-top: solid $primary-muted; border-title-color: $text-primary; }
    LowerPanes #wide-bottom { height: 3fr; }
    LowerPanes #wide-bottom > ValuesPane { width: 4fr; border-top: solid $primary-muted; border-title-color: $text-primary; }
    LowerPanes #side-tabs { width: 6fr; border-left: vkey $primary-muted; }
    /* Values whose grid is cut at 40% take 60% (a (2, 5, 16) slice, a (16,) gradient), and Explain
       keeps its 60% where the values fit (the legacy hook's side-by-side table needs it). */
    LowerPanes #wide-bottom > ValuesPane.-roomy { width: 9fr; }
    LowerPanes TabPane { padding: 0; }
    """

    wide: reactive[bool] = reactive(False, recompose=True)
    watching: reactive[bool] = reactive(False, recompose=True)  # the Watch tab is there

    def __init__(self, events: Sequence[Event] = (), info: TraceInfo | None = None, lines_for: LinesFor | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.events = events  # every firing known (the explain pane looks around the current one)
        self.info = info
        self.lines_for = lines_for  # source lines by file name (the app's Source decides what may be read)
        self.hidden: set[str] = set()  # hook kinds not shown (legacy_backward when off)
        self.stops: dict[tuple[int, int], Stop] = {}  # why a run stopped, by Event.key (the app's)
        self.against = None  # `view --against`: the other run's tensors by firing (TensorsPane)
        self.event: Event | None = None
        self.tensor_position = 0
        self.slice_no = 0
        self.active = "tensors"  # the tab shown when narrow
        self.side_active = "explain"  # the tab beside the values when wide
        self._pointed: tuple[int, int] | None = None  # the firing (Event.key) whose stop the panes last pointed at
        self._screen_size: Size | None = None  # the terminal's, as last fitted to
        self._watch_values: list = []  # the watches' values at the firing shown (the app's), and its note
        self._watch_note = ""
        self._tensors_stale = False  # the tensors pane was hidden when the firing shown changed
        self._composing = False  # recompose: the panes are being replaced
        self._asked: tuple | None = None  # a pane asked for meanwhile, and what to do with it (reveal)

    class LayoutChanged(Message):
        """The panes switched between tabs and side by side."""

        def __init__(self, wide: bool) -> None:
            super().__init__()
            self.wide = wide

    def watch_wide(self, wide: bool) -> None:
        self.set_class(wide, "-wide")
        self.post_message(self.LayoutChanged(wide))

    def fit(self, size: Size) -> None:
        """Tabs or side by side, for a terminal of `size`; as tabs, the rows to take."""
        self._screen_size = size
        wide = size.width >= WIDE[0] and size.height >= WIDE[1]
        if wide != self.wide:
            self.wide = wide
        self._fit_height()

    def rows_wanted(self, size: Size) -> int | None:
        """The rows the tabs take on a terminal of `size` (None: side by side, CSS decides)."""
        if self.wide:
            return None
        room = size.height - 2  # the status line and the footer
        share = max(LOWER_MIN, min(round(room * LOWER_SHARE), room - TOP_MIN))
        if self.active != "tensors" or not self.is_mounted:
            return share
        return max(LOWER_MIN, min(share, TABS + self.pane("tensors").rows_wanted(size.width)))

    def _fit_height(self) -> None:
        rows = self.rows_wanted(self._screen_size) if self._screen_size is not None else None
        height = f"{rows}" if rows is not None else "1fr"
        if str(self.styles.height) != height:  # a new height costs a layout of the screen
            self.styles.height = height

    def on_resize(self) -> None:
        self.fit(self.app.size)

    @property
    def tensor(self) -> TensorRecord | None:
        if self.event is None or not self.event.tensors:
            return None
        return self.event.tensors[min(self.tensor_position, len(self.event.tensors) - 1)]

    def compose(self) -> ComposeResult:
        panes = self._panes = {
            "tensors": TensorsPane(self.event, self.tensor_position, against=self.against, id="tensors"),
            "values": ValuesPane(self.tensor, self.slice_no, id="values"),
            # The stop too: a layout switch composes the panes again, and must keep saying why.
            "explain": ExplainPane(self.event, self.events, self.info, self.hidden,
                                   self.stops.get(self.event.key) if self.event is not None else None, id="explain"),
            "autograd": AutogradPane(self.event, id="autograd"),
            "source": SourceView(self.event, self.lines_for, call_site(self.event, self.events), id="source"),
        }
        self._tensors_stale = False  # each pane is drawn from this container's state when mounted
        tabs, side_tabs = PANES, SIDE
        if self.watching:
            panes[WATCH] = WatchPane(self._watch_values, self._watch_note, id=WATCH)
            tabs, side_tabs = PANES + (WATCH,), SIDE + (WATCH,)
        if self.wide:
            panes["tensors"].border_title = "Tensors"
            panes["values"].border_title = "Values"
            yield panes["tensors"]
            with Horizontal(id="wide-bottom"):
                yield panes["values"]
                side = self.active if self.active in side_tabs else self.side_active
                with self._tabs(TabbedContent(id="side-tabs", initial=f"tab-{side}")):
                    for name in side_tabs:
                        with TabPane(TITLES[name], id=f"tab-{name}"):
                            yield panes[name]
        else:
            with self._tabs(TabbedContent(id="tabs", initial=f"tab-{self.active}")):
                for name in tabs:
                    with TabPane(TITLES[name], id=f"tab-{name}"):
                        yield panes[name]

    def _tabs(self, tabs: TabbedContent) -> TabbedContent:
        # Told at once when a tab is switched to (after its pane is displayed, before the
        # screen is laid out and painted), so that it never shows an earlier firing.
        self.watch(tabs, "active", self._tab_switched, init=False)
        return tabs

    def _tab_switched(self, active: str) -> None:
        name = active.removeprefix("tab-")
        panes = getattr(self, "_panes", {})
        if name in panes and panes[name].is_attached:
            self.pane(name)

    def _on_screen(self, pane: Widget) -> bool:
        """Whether `pane` is displayed (not in a tab behind another): read from the display
        of it and its containers, which a tab switch sets at once (before any layout). A
        pane not mounted yet counts as shown: its own mount draws it."""
        node: Widget | None = pane
        while node is not None and node is not self:
            if not node.display:
                return False
            node = node.parent  # type: ignore[assignment]
        return True

    def pane(self, name: str) -> Widget:
        """Pane `name`, brought up to the firing shown first if it was hidden when that
        changed. Whatever reads a pane's content (its text, tree, grid, table) goes
        through here."""
        pane = self._panes[name]
        if name == "tensors":
            if self._tensors_stale:
                self._tensors_stale = False
                pane.show(self.event, self.tensor_position)
        else:
            pane.up_to_date()
        return pane

    def _give(self, name: str, *args) -> None:
        """Hand pane `name` what it shows (its `show` arguments): drawn now when on screen,
        else held (`hold`: kept, not drawn) until `pane` is asked for it."""
        pane = self._panes[name]
        if self._on_screen(pane):
            if name == "tensors":
                self._tensors_stale = False
            pane.show(*args)
        elif name == "tensors":  # its table belongs to tensors.py: held here
            self._tensors_stale = True
        else:
            pane.hold(*args)

    def show(self, event: Event | None, streaming: bool = False) -> None:
        """Show firing `event`; keeps the chosen tensor (and slice) when the new firing
        has a tensor of the same name. `streaming`: the model runs on and this firing is
        gone in a moment: the values grid (the costliest to draw, and the UI thread shares
        the model's GIL) waits for the next firing shown at rest."""
        previous = self.tensor
        self.event = event
        names = [t.name for t in event.tensors] if event is not None else []
        # Once per stop (a later redraw keeps the user's choice of tensor); not while streaming.
        bad = None if streaming or event is None or event.key == self._pointed else self._stopped_on(event)
        if bad is not None:
            self._pointed = event.key  # a value stop: the tensor it names, at its first non-finite value
            self.tensor_position = bad
            self.slice_no = 0
        elif previous is not None and previous.name in names:
            self.tensor_position = names.index(previous.name)
        else:
            self.tensor_position = 0
            self.slice_no = 0
        if not self.is_mounted:
            return
        panes = self._panes  # this composition's (kept, not queried: a DOM walk each)
        self._give("tensors", event, self.tensor_position)
        if not streaming:
            self._give("values", self.tensor, self.slice_no)
            if bad is not None:
                panes["values"].point_at_first_nonfinite()  # at once, or when drawn
                self.slice_no = panes["values"].slice_no
        self._give("autograd", event)
        self._give("source", event, call_site(event, self.events))
        self.refresh_explain()
        if not streaming:  # a new split costs a layout: not while the run streams
            self._fit_height()

    def _stopped_on(self, event: Event | None) -> int | None:
        """Position of the first tensor a value breakpoint stopped on at `event`, if it did."""
        stop = self.stops.get(event.key) if event is not None else None
        if stop is None or stop.breakpoint.kind not in ("nonfinite", "threshold"):
            return None
        return next((p for p, t in enumerate(event.tensors) if stop.breakpoint.tensor_reason(t, event.phase)), None)

    def refresh_explain(self) -> None:
        """Explain the current firing again (new firings change what can be said)."""
        if not self.is_mounted:
            return
        stop = self.stops.get(self.event.key) if self.event is not None else None
        self._give("explain", self.event, self.events, self.info, self.hidden, stop)

    def show_watches(self, values: list, note: str) -> None:
        """The watches' values at the firing shown (the app evaluates them)."""
        self._watch_values, self._watch_note = list(values), note
        if self.is_mounted and WATCH in self._panes:
            self._give(WATCH, values, note)

    @property
    def values_pane(self) -> ValuesPane | None:
        return self.pane("values") if self.is_mounted else None

    @property
    def slices(self) -> int:
        """How many 2-D slices `[` `]` step through in the values pane (drawn or not)."""
        return self._panes["values"].slices if self.is_mounted else 0

    def on_tabbed_content_tab_activated(self, message: TabbedContent.TabActivated) -> None:
        name = (message.pane.id or "").removeprefix("tab-")
        if message.tabbed_content.id == "side-tabs":
            self.side_active = name
        elif name in PANES or name == WATCH:
            self.active = name
            self._fit_height()

    def on_tensor_chosen(self, message: TensorChosen) -> None:
        message.stop()
        table = self._panes["tensors"].table if self.is_mounted else None
        if message.position == self.tensor_position or table is not None and message.position != table.cursor_row:
            return  # already shown, or stale: a row the table passed through while being refilled
        self.tensor_position = message.position
        self.slice_no = 0
        if self.is_mounted:
            self._give("values", self.tensor, 0)

    def step_slice(self, delta: int, outer: bool = False) -> None:
        if self.is_mounted:
            pane = self.pane("values")
            pane.step_slice(delta, outer)
            self.slice_no = pane.slice_no

    async def recompose(self) -> None:
        # While the panes are composed again (the layout switched at a resize, the Watch tab
        # added), the old ones are gone and the new ones not mounted yet: a pane asked for
        # then (`x` pressed just after a resize) is shown once they are there.
        self._composing = True
        try:
            await super().recompose()
        finally:
            self._composing = False
        asked, self._asked = self._asked, None
        if asked is not None and self.is_attached:
            self.reveal(*asked)

    def reveal(self, name: str, then: Callable[[Widget], object] | None = None) -> Widget | None:
        """Bring pane `name` on screen (switching tabs if needed) and return it; `then` is
        called with it. While the panes are being composed again there is none to return:
        it is chosen now (a composition still to come starts on its tab), brought on screen
        and handed to `then` once they are mounted."""
        if self._composing:
            self.active = name
            if name in SIDE or name == WATCH:
                self.side_active = name
            self._asked = (name, then)
            return None
        pane = self.query_one(f"#{name}")
        for tabs in self.query(TabbedContent):
            if tabs.query(f"#tab-{name}"):
                tabs.active = f"tab-{name}"
        self.active = name
        if name in SIDE or name == WATCH:
            self.side_active = name
        pane = self.pane(name) if name in self._panes else pane
        if then is not None:
            then(pane)
        return pane

    def visible_panes(self) -> list[str]:
        """The panes on screen now (not hidden in an inactive tab)."""
        out = []
        for name in (*PANES, WATCH):
            if name not in self._panes:
                continue
            pane = self.query_one(f"#{name}")
            tab = pane.parent
            if isinstance(tab, TabPane):
                tabs = tab.parent
                while tabs is not None and not isinstance(tabs, TabbedContent):
                    tabs = tabs.parent
                if tabs is not None and tabs.active != tab.id:
                    continue
            out.append(name)
        return out
