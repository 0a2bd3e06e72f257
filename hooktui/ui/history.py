"""Where the user is in the list of firings: plain Python, no Textual, no torch.

The list only grows. `cursor` is the firing on screen; `follow` says the cursor moves
to each new firing as it arrives (stepping forward at the latest one, or `G`). Firings
whose hook kind is in `hidden` (legacy_backward while the legacy view is off) stay in the
list but moving skips them: `latest` is the last firing that is not hidden, and the
status line's "12/28" counts the shown firings only (`shown_ordinal`, `shown_total`).

The list is a `HeldEvents` (engine/records/held.py) that packs its older firings 32 at a
time while the run goes on, as soon as nothing in them can change (their summaries settled),
so that a long run's records die young and the run reuses their memory: reading one
unpacks its chunk. It never packs what is left when the run ends (the screen would wait).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Collection, Iterable

from ..engine.analysis.breakpoints import BreakpointList, Stop
from ..engine.records import firing
from ..engine.records.held import HeldEvents
from ..engine.records.records import Event


class History:
    def __init__(self) -> None:
        self.events: HeldEvents = HeldEvents(packs_at_run_end=False)
        self.cursor = -1
        self.follow = True
        # The indexes below get an entry during the run, and what a run makes and keeps
        # keeps the memory around it (records/held.py): no tuple a key, no int a position
        # in a list (arrays hold them as numbers).
        # phase -> module -> index of its first firing in that phase.
        self._first: dict[str, dict[str, int]] = {}
        # phase -> (positions, modules) of those first firings, in order of position.
        self._firsts: dict[str, tuple[array, list[str]]] = {}
        self.per_phase: dict[str, int] = {}
        self.error: Event | None = None  # the `error` firing of a failed run
        self.error_position = -1
        self.hidden: set[str] = set()  # hook kinds that moving skips
        # Positions of the firings of each kind a view may hide (legacy_backward), in order.
        self._hideable: dict[str, array] = {}
        self._hidden_per_phase: dict[str, dict[str, int]] = {}  # per_phase, by hook kind
        # Cells the longest sub-number takes (".1": 2), 0 while no firing has one (Event.sub).
        self.sub_width = 0

    def __len__(self) -> int:
        return len(self.events)

    def shown_per_phase(self) -> dict[str, int]:
        """Firings per phase that the view shows (per_phase less the hidden kinds'): the
        totals the timeline's rows add up to."""
        shown = dict(self.per_phase)
        for kind in self.hidden:
            for phase, n in self._hidden_per_phase.get(kind, {}).items():
                shown[phase] -= n
        return {phase: n for phase, n in shown.items() if n}

    def visible(self, position: int) -> bool:
        return self.events.hook_at(position) not in self.hidden

    def _hidden_upto(self, position: int) -> int:
        """How many hidden firings are at positions before `position`."""
        return sum(bisect_left(self._hideable.get(kind, ()), position) for kind in self.hidden)

    @property
    def shown_total(self) -> int:
        """How many firings are shown (the timeline's rows without a filter; what a save
        writes, its prompt says): from the indexes, nothing unpacked."""
        return len(self.events) - self._hidden_upto(len(self.events))

    def shown_firings(self, upto: int, hidden: Collection[str]) -> list[Event]:
        """The firings among the first `upto` that are not of a kind in `hidden`, in order
        (what a save writes: a packed history unpacked a chunk at a time)."""
        return [e for e in self.events[:upto] if e.hook not in hidden]

    def shown_ordinal(self, position: int) -> int:
        """`position` counted among the shown firings (0-based): the row a status line says."""
        return position - self._hidden_upto(position)

    def next_visible(self, position: int, delta: int) -> int | None:
        """The first shown firing after (`delta` > 0) or before `position`, if any."""
        step = 1 if delta > 0 else -1
        position += step
        while 0 <= position < len(self.events):
            if self.visible(position):
                return position
            position += step
        return None

    @property
    def latest(self) -> int:
        last = len(self.events) - 1
        if not self.hidden:
            return last
        position = last
        while position >= 0 and not self.visible(position):
            position -= 1
        return position if position >= 0 else last

    @property
    def current(self) -> Event | None:
        return self.events[self.cursor] if 0 <= self.cursor < len(self.events) else None

    @property
    def at_latest(self) -> bool:
        """No shown firing after the cursor."""
        return self.cursor >= self.latest

    def extend(self, events: Iterable[Event]) -> int:
        """Add firings; returns how many. The cursor follows when `follow` is set."""
        added = 0
        for event in events:
            self.events.append(event)
            firsts = self._first.get(event.phase)
            if firsts is None:
                firsts = self._first[event.phase] = {}
            if event.module not in firsts:
                position = firsts[event.module] = len(self.events) - 1
                positions, modules = self._firsts.setdefault(event.phase, (array("q"), []))
                positions.append(position)
                modules.append(event.module)
            if firing.visibility(event.hook) is firing.Visibility.HIDDEN_LEGACY:
                self._hideable.setdefault(event.hook, array("q")).append(len(self.events) - 1)
            if event.sub:
                self.sub_width = max(self.sub_width, len(str(event.sub)) + 1)
            if event.hook == "error":
                self.error, self.error_position = event, len(self.events) - 1
            else:
                self.per_phase[event.phase] = self.per_phase.get(event.phase, 0) + 1
                counts = self._hidden_per_phase.setdefault(event.hook, {})
                counts[event.phase] = counts.get(event.phase, 0) + 1
            added += 1
        if added and (self.follow or self.cursor < 0):
            self.cursor = self.latest
        return added

    def move(self, position: int) -> bool:
        """Show firing `position` (clamped); True when the cursor moved."""
        if not self.events:
            return False
        position = max(0, min(position, self.latest))
        moved = position != self.cursor
        self.cursor = position
        self.follow = position >= self.latest and self.follow
        return moved

    def visited(self, module: str, phase: str, upto: int) -> bool:
        """Did `module` fire in `phase` at or before position `upto`?"""
        first = self._first.get(phase, {}).get(module)
        return first is not None and first <= upto

    def first_fired_between(self, phase: str, after: int, upto: int) -> list[str]:
        """The modules whose first firing in `phase` is at a position in (after, upto]:
        the ones whose `visited` changes when the cursor moves between the two."""
        positions, modules = self._firsts.get(phase, ((), ()))
        return list(modules[bisect_right(positions, after) : bisect_right(positions, upto)])

    def find_stop(self, breakpoints: BreakpointList, break_on_backward: bool, count: bool = False) -> tuple[int, Stop | None] | None:
        """The first known firing after the cursor where a run would pause, and why.

        Breakpoints decided from records are checked again here; a condition needs the
        live objects, so for it the firings it matched when they happened stand in.
        """
        hits = breakpoints.live_hits
        enabled = breakpoints.enabled if hits else frozenset()
        previous = self.events[self.cursor].phase if self.cursor >= 0 else None
        births = breakpoints.replayed_births(self.events[: self.cursor + 1])  # `born_only` ones: from the start
        for position in range(self.cursor + 1, len(self.events)):
            event = self.events[position]
            if event.hook in self.hidden:
                breakpoints.check(event, live=None, count=False, records_only=True, births=births)  # followed, never a stop
                continue
            if break_on_backward and event.phase == "backward" and previous != "backward":
                return position, None
            # count: a live session's hit counts include stops made walking its history (once each)
            stop = breakpoints.check(event, live=None, count=count, records_only=True, births=births)
            if stop is None and hits:
                stop = hits.get(event.key)
                stop = stop if stop is not None and stop.breakpoint in enabled else None
            if stop is not None:
                return position, stop
            previous = event.phase
        return None
