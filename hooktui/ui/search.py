"""The firings of the history that the search matches: plain Python, no Textual.

Found as the history grows (each firing is checked once, when first asked about), in
order of position, hidden firings (legacy ones while `L` hides them) left out: `n` / `N`
move between these, the timeline marks them and the status line counts them. A packed
history is searched from its columns, without unpacking it (`Search.positions`).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right

from ..engine.analysis.search import Search
from .history import History


class Matches:
    def __init__(self, search: Search, history: History) -> None:
        self.search = search
        self.history = history
        self._positions = array("q")
        self._scanned = 0

    @property
    def text(self) -> str:
        return self.search.text

    def rescan(self) -> None:
        """The hidden kinds changed: find the matches again."""
        self._positions = array("q")
        self._scanned = 0

    def _catch_up(self) -> array:
        events = self.history.events
        end = len(events)
        if self._scanned < end:
            # A packed history's firings are decided from its columns (engine/records/held.py).
            self._positions.extend(self.search.positions(events, self._scanned, end, self.history.hidden))
            self._scanned = end
        return self._positions

    def __len__(self) -> int:
        return len(self._catch_up())

    def __contains__(self, position: int) -> bool:
        positions = self._catch_up()
        i = bisect_left(positions, position)
        return i < len(positions) and positions[i] == position

    def ordinal(self, position: int) -> int | None:
        """1 for the first match, ...; None when `position` is not one."""
        positions = self._catch_up()
        i = bisect_left(positions, position)
        return i + 1 if i < len(positions) and positions[i] == position else None

    def after(self, position: int, inclusive: bool = False) -> int | None:
        """The first match after `position` (at it too, with `inclusive`)."""
        positions = self._catch_up()
        i = (bisect_left if inclusive else bisect_right)(positions, position)
        return positions[i] if i < len(positions) else None

    def before(self, position: int) -> int | None:
        positions = self._catch_up()
        i = bisect_left(positions, position)
        return positions[i - 1] if i else None

    def first(self) -> int | None:
        positions = self._catch_up()
        return positions[0] if positions else None

    def last(self) -> int | None:
        positions = self._catch_up()
        return positions[-1] if positions else None
