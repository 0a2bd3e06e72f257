"""Add a watch expression (`W`): a small modal with one input; the app adds it to the
Watch pane, where it is evaluated again at every firing (engine/analysis/watch.py)."""

from __future__ import annotations

from textual.widgets import Input

from .one_line import OneLineScreen


class WatchScreen(OneLineScreen):
    def __init__(self, where: str) -> None:
        super().__init__(
            title="watch an expression", subtitle="enter adds · escape closes",
            context=where,
            input=Input(placeholder="grad_output[0].norm()", id="watch-input"), width=70,
        )

    def answer(self, text: str) -> str | None:
        return text.strip() or None
