"""How a signal ends the app (ui/ending.py), on a machine too loaded for the app's own exit
to end within the watchdog's grace: the watchdog unwinds only a loop that never answered,
never an app that is already ending its own way (its exception landed in the middle of
Textual's exit, and the terminal stayed in the alternate screen). And what is said after
Textual's writer thread stopped still reaches the terminal (ui/terminal_driver.py)."""

from __future__ import annotations

import asyncio
import io
import signal
import threading

import pytest

from hooktui.ui.ending import EndedBySignal, Ending
from hooktui.ui.terminal_driver import TerminalDriver

SAFETY = 5.0  # seconds: a safety net for a watchdog that should have ended long before


def _installed(ending: Ending, loop) -> threading.Thread:
    """Install `ending`; its watchdog thread."""
    before = set(threading.enumerate())
    ending.install(loop)
    (watchdog,) = [t for t in threading.enumerate() if t not in before and t.name == "hooktui signal watchdog"]
    return watchdog


def test_an_app_ending_its_own_way_after_the_grace_is_not_unwound():
    answered = []
    ending = Ending([signal.SIGUSR2], answered.append, grace=0.01)
    loop = asyncio.new_event_loop()
    unwound = None
    try:
        watchdog = _installed(ending, loop)
        signal.raise_signal(signal.SIGUSR2)
        loop.run_until_complete(asyncio.sleep(0))  # the loop answers: the app begins its exit
        assert answered == [signal.SIGUSR2]
        # Its exit takes many times the grace (a loaded machine). Before the fix the watchdog
        # raised EndedBySignal here, in the middle of it, and then ended.
        try:
            watchdog.join(100 * ending.grace)
            sum(range(1000))  # a few bytecodes, where an exception raised into this thread lands
        except EndedBySignal:
            unwound = "EndedBySignal raised into an app that was ending its own way"
        assert unwound is None and not ending.unwound, unwound
        assert watchdog.is_alive()  # still watching, for an exit that never ends (ANSWERED_GRACE)
        ending.closed()
        watchdog.join(SAFETY)
        assert not watchdog.is_alive()
    finally:
        ending.closed()
        loop.close()


def test_a_loop_that_never_answers_is_unwound_after_the_grace():
    answered = []
    ending = Ending([signal.SIGUSR2], answered.append, grace=0.01)
    loop = asyncio.new_event_loop()
    try:
        watchdog = _installed(ending, loop)
        with pytest.raises(EndedBySignal):
            signal.raise_signal(signal.SIGUSR2)  # the loop never runs: it cannot answer
            watchdog.join(SAFETY)
            while True:  # until the exception lands (the watchdog raised it as it ended)
                sum(range(1000))
        assert ending.unwound and answered == []
        assert ending.signum == signal.SIGUSR2
    finally:
        ending.closed()
        loop.close()


def test_a_write_after_the_writer_thread_stopped_reaches_the_terminal():
    async def driver() -> TerminalDriver:
        return TerminalDriver(app=None)

    loop = asyncio.new_event_loop()
    try:
        made = loop.run_until_complete(driver())
    finally:
        loop.close()
    made._file = io.StringIO()
    from textual.drivers._writer_thread import WriterThread

    writer = WriterThread(made._file)
    writer.start()
    made._writer_thread = writer
    made.write("drawn\n")
    writer.stop()  # Textual's close(): the app's exit had got that far
    made.write("\x1b[?1049l")  # what an unwound app's give_back_terminal says (ui/ending.py)
    assert made._file.getvalue() == "drawn\n\x1b[?1049l"
