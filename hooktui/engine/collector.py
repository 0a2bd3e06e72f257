"""Keeping Python's cyclic garbage collector out of the way of what hooktui builds.

A run lives alongside many long-lived objects (records, hooks), none of them garbage
until the run ends. Every full collection walks all the objects it tracks, so a run
that keeps growing them pays a collection cost that grows with the run. Session.run
freezes what exists as the run starts and every so many firings, and unfreezes it all
when the run ends (so the model's own garbage cycles are collected then).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_then_frozen() -> Iterator[None]:
    """Around hooktui's own bulk work, in which no user code runs (placing a backward's
    watches: several objects per node of the graph, all alive until the backward ends).
    The collector would walk them repeatedly as they are made and free nothing (7 full
    passes, 0.76 s of a 3.3 s run at 10,000 modules: docs/benchmarks.md); paused while
    they are made, then frozen with everything else alive (unfrozen as the run ends)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
        gc.freeze()
