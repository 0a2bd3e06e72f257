"""The `/` search, as less and vim have it. Mixed into HooktuiApp (plain methods only, as
navigation.py).

`/` opens a one-line query (engine/analysis/search.py says its words); enter moves to the
first match at or after the current firing. The whole list stays on screen, the matches
marked. While a search is on, `n` / `N` move to the next / previous match; past the last
one they wrap round (the status line says so), except that `n` in a live run that can go
on runs the model on to the next matching firing (or a breakpoint), as `c` would, and says
"no more matches" if the run ends first. Escape ends the search: `n` / `N` step again.
"""

from __future__ import annotations

from ..engine.analysis.search import parse_search
from ..visible import visible
from .search import Matches
from .widgets.search_input import SearchBar

# What the status line says after the query (besides where among the matches the cursor is).
WRAPPED_FORWARD = WRAPPED_BACK = "wrapped"  # the count says where to: 17/17 -> 1/17
NO_MATCH = "no match"
NO_MORE = "no more matches"
SEARCHING = "searching…"


class SearchActions:
    search: Matches | None = None
    # (cursor, words): what the last search move had to say, shown while the cursor stays there.
    _search_note: tuple[int, str] | None = None
    _search_run = False  # `n` set the live model going to the next match

    # -- the query -------------------------------------------------------------------------
    def action_search(self) -> None:
        self.query_one(SearchBar).open(self.search.text if self.search is not None else "")

    def search_submitted(self, text: str) -> None:
        bar = self.query_one(SearchBar)
        if not text.strip():
            bar.close()
            self.timeline.focus()
            if self.search is not None:
                self.search_next()  # as less and vim: an empty query repeats the last one
            return
        try:
            search = parse_search(text)
        except ValueError as exc:
            bar.say(str(exc))
            return
        bar.close()
        self.timeline.focus()
        self.search = Matches(search, self.history)
        self.timeline.set_search(self.search)
        self.search_next(inclusive=True)

    def action_clear_search(self) -> None:
        """Escape, wherever the focus is: ends the search (and the `&` filter)."""
        bar = self.query_one(SearchBar)
        if bar.has_class("-open"):
            bar.close()
            self.timeline.focus()
        if self.search is not None:
            self.search = None
            self._search_note = None
            self.timeline.set_search(None)
            self._render_status()
        self.action_clear_filter()

    # -- moving between matches --------------------------------------------------------------
    def action_search_next(self) -> None:
        if self.search is None:
            self.action_step()
        else:
            self.search_next()

    def action_search_previous(self) -> None:
        if self.search is None:
            self.action_back()
        else:
            self.search_previous()

    def search_next(self, inclusive: bool = False) -> None:
        matches, history = self.search, self.history
        position = matches.after(history.cursor, inclusive=inclusive)
        if position is not None:
            self._search_goto(position, "")
        elif self.source.can_advance:
            self._run_to_next_match()
        elif (first := matches.first()) is not None:
            self._search_goto(first, WRAPPED_FORWARD)
        else:
            self._say_search(NO_MATCH)

    def search_previous(self) -> None:
        matches = self.search
        position = matches.before(self.history.cursor)
        if position is not None:
            self._search_goto(position, "")
        elif (last := matches.last()) is not None:
            self._search_goto(last, WRAPPED_BACK)
        else:
            self._say_search(NO_MATCH)

    def _search_goto(self, position: int, note: str) -> None:
        self._search_note = (position, note) if note else None
        self.goto(position, follow=position >= self.history.latest)

    def _say_search(self, note: str) -> None:
        self._search_note = (self.history.cursor, note)
        self._render_status()

    def _run_to_next_match(self) -> None:
        """Nothing known matches after the cursor: the live model runs on until a firing does."""
        if self._search_run or self._stepping:
            return  # on its way already
        self._search_run = True
        self._queued_steps = 0
        # Every firing up to the latest was looked at, none matched: the run goes on from there.
        self.goto(self.history.latest, follow=True)
        self.source.run_until(self.search.search.matches)

    def search_run_ended(self, state: str) -> None:
        """The model stopped (or ended) after `n` sent it on: say so if no match came."""
        if not self._search_run or state == "running":
            return
        self._search_run = False
        if self.search is None:
            return
        if state == "paused":
            self._search_note = None  # a match, or a breakpoint (the status line says which)
        else:
            self._search_note = (self.history.cursor, NO_MORE)

    # -- the status line's part ---------------------------------------------------------------
    def search_status(self) -> tuple[str, str] | None:
        """(`/grad_out`, `3/17`): the query, and where among the matches the current
        firing is with what the last move had to say."""
        matches = self.search
        if matches is None:
            return None
        cursor = self.history.cursor
        ordinal = matches.ordinal(cursor)
        count = len(matches)
        where = f"{ordinal}/{count}" if ordinal is not None else f"{count} match{'' if count == 1 else 'es'}"
        note = self._search_note[1] if self._search_note is not None and self._search_note[0] == cursor else ""
        if self._search_run:
            note = SEARCHING
        elif note == NO_MATCH and count:
            note = ""  # matches came since (a live run)
        if note == NO_MATCH:
            where = ""
        return f"/{visible(matches.text)}", "  ".join(part for part in (where, note) if part)
