"""Keep what the model prints out of hooktui's own output.

`hooktui trace --json` promises pure JSON lines on stdout; a hook or a forward that prints
would break every parser downstream. While the model loads and runs, file descriptor 1 and
`sys.stdout` point at stderr, so its prints (Python's or a C extension's) land there, and
hooktui writes its records to a private copy of the real stdout.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterator
from typing import TextIO


@contextlib.contextmanager
def records_stdout() -> Iterator[TextIO]:
    """Yields the stream hooktui's records go to; meanwhile anything else written to
    stdout goes to stderr."""
    real = sys.stdout
    try:
        real.flush()
        fd = real.fileno()
        saved = os.dup(fd)
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        # No file descriptor (stdout replaced, e.g. in-process tests): Python-level only.
        sys.stdout = sys.stderr
        try:
            yield real
        finally:
            sys.stdout = real
        return
    out = os.fdopen(saved, "w", encoding=getattr(real, "encoding", None) or "utf-8", buffering=1)
    os.dup2(sys.stderr.fileno(), fd)
    sys.stdout = sys.stderr
    try:
        yield out
    finally:
        sys.stdout = real
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os.dup2(saved, fd)
        try:
            out.close()
        except OSError:  # a closed pipe (`| head`): nothing more can reach it
            pass
