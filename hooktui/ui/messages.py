"""Messages between the model's worker thread, the sources and the widgets."""

from __future__ import annotations

from textual.message import Message


class EventsReady(Message):
    """The worker produced firings; the app drains them from the source (one message
    per batch, however many firings arrive before the app gets to it)."""


class StateChanged(Message):
    """The run changed state: running, paused, finished, failed or quit."""

    def __init__(self, state: str) -> None:
        super().__init__()
        self.state = state


class FiringChosen(Message):
    """A widget asks to show the firing at `position` in the history (the timeline's
    cursor moved)."""

    def __init__(self, position: int) -> None:
        super().__init__()
        self.position = position


class TensorChosen(Message):
    """The tensors table's cursor moved to tensor `position` of the current firing."""

    def __init__(self, position: int) -> None:
        super().__init__()
        self.position = position


class NoticeMade(Message):
    """A notice to say in the footer's row (widgets/notice.py): posted, since `App.notify` is
    called from the model's thread too (model_stdin.py), and the line's timers are the app's."""

    def __init__(self, message: str, title: str, severity: str, timeout: float | None, markup: bool) -> None:
        super().__init__()
        self.message, self.title, self.severity, self.timeout, self.markup = message, title, severity, timeout, markup
