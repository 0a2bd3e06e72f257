"""SIGTERM and SIGHUP during `hooktui trace`: by default they kill the process where it
stands, leaving a half-written `.run.jsonl.XXXX.tmp` beside a `--save` file. While a
command runs they raise errors.Terminated instead, which unwinds like Ctrl+C: the
temporary file is removed, any previous file kept, one line, exit 128 + N. A signal the
caller chose to ignore (`nohup` ignores SIGHUP) stays ignored."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator

from ..errors import Terminated

REQUESTS = (signal.SIGTERM, signal.SIGHUP)


_OWNER: list[int] = []  # the pid that installed the handler


def _raise(signum: int, frame) -> None:
    if os.getpid() not in _OWNER:
        # A process the model forked (a Pool's worker, which Pool.terminate() ends with
        # SIGTERM) inherited the handler: it ends as it would without hooktui.
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    raise Terminated(signum)


@contextlib.contextmanager
def end_requests_raise() -> Iterator[None]:
    previous = {}
    _OWNER[:] = [os.getpid()]
    for signum in REQUESTS:
        try:
            if signal.getsignal(signum) is signal.SIG_DFL:
                previous[signum] = signal.signal(signum, _raise)
        except (ValueError, OSError):  # not the main thread: left as they are
            pass
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
