"""Standard streams a command was started without (`hooktui trace M.py >&-`, `2>&-`).

A closed file descriptor 0, 1 or 2 is the next one `open()` hands out: hooktui's own
temporary trace file, or the private copy of stdout that trace writes its records to,
would become "stdout", and Python's `sys.stdout` is None (a `write` on it an
AttributeError inside the model's run, blamed on the model). So, before anything else,
each closed one is opened on /dev/null and its `sys` stream rebuilt; which were closed is
remembered, for the commands whose output is the point (trace, diff) to refuse at once.
"""

from __future__ import annotations

import os
import sys

_CLOSED: set[int] = set()
_NAMES = {0: "stdin", 1: "stdout", 2: "stderr"}


def reopen_closed() -> None:
    """Open each closed standard descriptor on /dev/null (lowest first: `os.open` hands out
    the lowest free one), and give `sys` a stream for it."""
    for fd, flags in ((0, os.O_RDONLY), (1, os.O_WRONLY), (2, os.O_WRONLY)):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        null = os.open(os.devnull, flags)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
        _CLOSED.add(fd)
        stream = open(fd, "r" if fd == 0 else "w", closefd=False, encoding="utf-8", errors="backslashreplace")
        setattr(sys, _NAMES[fd], stream)


def stdout_closed() -> bool:
    """Whether hooktui was started with its standard output closed (`>&-`)."""
    return 1 in _CLOSED
