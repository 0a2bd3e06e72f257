"""Go to firing #N (`#`): the number Explain, `trace`, `diff` and the guard all cite.

A small modal with one input, a number as every view prints it ("39", or "39.1" for a firing
stepped into with `s`: engine/records/records.py, Event.sub); the app does the moving
(NavigationActions.go_to_index) and says why when it cannot (not fired yet, a hidden legacy
firing)."""

from __future__ import annotations

from textual.widgets import Input

from ...engine.records.records import parse_firing_number
from .one_line import OneLineScreen


class GotoScreen(OneLineScreen):
    def __init__(self, latest: str | None) -> None:
        super().__init__(
            title="go to firing #", subtitle="enter goes · escape closes",
            context="no firing yet" if latest is None else f"fired so far: #0 to #{latest}",
            input=Input(placeholder="N or N.k", restrict=r"#?[0-9]*\.?[0-9]*", id="goto-input"),
        )

    def answer(self, text: str) -> tuple[int, int] | None:
        return parse_firing_number(text)
