"""Where the user is in the list of firings: plain Python, no Textual, no torch.

The list only grows. `cursor` is the firing on screen; `follow` says the cursor moves
to each new firing as it arrives (stepping forward at the latest one, or `G`).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..engine.gate import Breakpoint
from ..engine.records import Event


class History:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.cursor = -1
        self.follow = True
        # (phase, module) -> index of its first firing in that phase.
        self._first: dict[tuple[str, str], int] = {}
        self.per_phase: dict[str, int] = {}
        self.error: Event | None = None  # the `error` firing of a failed run
        self.error_position = -1

    def __len__(self) -> int:
        return len(self.events)

    @property
    def latest(self) -> int:
        return len(self.events) - 1

    @property
    def current(self) -> Event | None:
        return self.events[self.cursor] if 0 <= self.cursor < len(self.events) else None

    @property
    def at_latest(self) -> bool:
        return self.cursor == self.latest

    def extend(self, events: Iterable[Event]) -> int:
        """Add firings; returns how many. The cursor follows when `follow` is set."""
        added = 0
        for event in events:
            self.events.append(event)
            self._first.setdefault((event.phase, event.module), len(self.events) - 1)
            if event.hook == "error":
                self.error, self.error_position = event, len(self.events) - 1
            else:
                self.per_phase[event.phase] = self.per_phase.get(event.phase, 0) + 1
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
        self.follow = position == self.latest and self.follow
        return moved

    def visited(self, module: str, phase: str, upto: int) -> bool:
        """Did `module` fire in `phase` at or before position `upto`?"""
        first = self._first.get((phase, module))
        return first is not None and first <= upto

    def find_stop(self, breakpoints: Iterable[Breakpoint], break_on_backward: bool) -> int | None:
        """The first known firing after the cursor where a run would pause, if any."""
        breakpoints = list(breakpoints)
        previous = self.events[self.cursor].phase if self.cursor >= 0 else None
        for position in range(self.cursor + 1, len(self.events)):
            event = self.events[position]
            if break_on_backward and event.phase == "backward" and previous != "backward":
                return position
            if any(bp.matches(event) for bp in breakpoints):
                return position
            previous = event.phase
        return None
