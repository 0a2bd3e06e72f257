"""Keeping Python's cyclic garbage collector out of the way of what hooktui builds.

A run lives alongside many long-lived objects (records, hooks), none of them garbage
until the run ends. Every full collection walks all the objects it tracks, so a run
that keeps growing them pays a collection cost that grows with the run. So a run freezes
what exists as it starts, every so many firings and once a backward is set up, and
unfreezes it all when it ends (the model's own garbage cycles are collected then).

Unfreezing is all or nothing: a process that froze objects of its own before the run
(`gc.freeze()` before forking data-loader workers, to keep their pages shared) would get
them back in the collector's reach. In such a process hooktui freezes nothing.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_runs = 0  # runs under way (on any thread)
_freezing = False  # whether those runs freeze (nothing was frozen before the first)


def run_started() -> None:
    global _runs, _freezing
    with _lock:
        if _runs == 0:
            _freezing = gc.get_freeze_count() == 0
        _runs += 1
    freeze()


def run_ended() -> None:
    """The last run under way unfreezes what the runs froze."""
    global _runs
    with _lock:
        _runs = max(0, _runs - 1)
        if _runs == 0 and _freezing:
            gc.unfreeze()


def freeze() -> None:
    """Move everything alive now out of the collector's reach until the runs end."""
    with _lock:
        if _runs and _freezing:
            gc.freeze()


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
        freeze()  # first: a collection triggered between enabling and freezing would walk them all
        if enabled:
            gc.enable()
