"""Save the firings so far to a trace file (`S`), for `hooktui view` and `hooktui diff`.

A small modal with one input, prefilled with a file name not used yet; the app writes the
file (engine/records/trace_file.py: atomically, with the source lines around every call site)."""

from __future__ import annotations

from textual.widgets import Input

from .one_line import OneLineScreen


class SaveScreen(OneLineScreen):
    def __init__(self, default: str, count: int) -> None:
        super().__init__(
            title="save the firings so far", subtitle="enter saves · escape closes",
            context=f"{count} firing{'' if count == 1 else 's'}, to a trace file for hooktui view / hooktui diff",
            input=Input(value=default, id="save-input", select_on_focus=False), width=70,
        )

    def answer(self, text: str) -> str | None:
        return text.strip() or None
