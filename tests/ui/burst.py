"""Keys as a terminal delivers a paste or fast typing: all in the app's queue before the
first is handled. The pilot's `press` waits for the app to be idle after every key, which
hides any key handled before a focus change has taken effect."""

from __future__ import annotations

from textual import events
from textual.keys import _character_to_key


CHARACTERS = {"enter": "\r", "escape": "\x1b", "backspace": "\x7f"}


def burst(app, text: str, *then: str) -> None:
    """Post every character of `text`, then the named keys `then` (e.g. "enter"), at once."""
    keys = [events.Key(_character_to_key(char), char) for char in text]
    keys += [events.Key(key, CHARACTERS.get(key)) for key in then]
    for key in keys:  # as the pilot sends one key, less its wait for idle
        key.set_sender(app)
        app._driver.send_message(key)
