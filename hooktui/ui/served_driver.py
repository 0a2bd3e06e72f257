"""Textual's web driver (an app behind `hooktui serve`), ending with its server.

textual-serve runs each app with a pipe from the server as its stdin. When the server ends
normally it tells its apps to quit; when it is SIGKILLed (or crashes) nobody tells them, and
Textual's driver, finding the end of its input, just stops reading: the app, its model and
torch lived on, reparented, holding memory and a GPU for nobody (issue 35). The end of that
pipe is the one sign every OS gives, so here it is the hang-up it is: the app sends itself
SIGHUP, which ends it as a terminal's hang-up does (ui/ending.py; exit status 129).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

from textual.drivers.web_driver import WebDriver


class _Input:
    """The driver's input reader, noting whether the input ended (rather than being closed
    by the driver as the app stops, or left by a quit from the server)."""

    def __init__(self, reader, driver: ServedDriver) -> None:
        self.reader = reader
        self.driver = driver
        self.ended = False

    def __iter__(self) -> Iterator[bytes]:
        yield from self.reader
        # Here only when the reader stopped by itself: closed by the driver, or at the end
        # of the pipe (a quit packet leaves through an exception, never reaching this line).
        self.ended = not self.driver.exit_event.is_set()

    def close(self) -> None:
        self.reader.close()


class ServedDriver(WebDriver):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._input_reader = _Input(self._input_reader, self)

    def run_input_thread(self) -> None:
        super().run_input_thread()
        if self._input_reader.ended:  # the server is gone
            os.kill(os.getpid(), signal.SIGHUP)
