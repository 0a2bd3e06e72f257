"""Keeping Python's cyclic garbage collector out of the way of what hooktui builds.

A run lives alongside many long-lived objects (records, hooks), none of them garbage
until the run ends. Every full collection walks all the objects it tracks, so a run
that keeps growing them pays a collection cost that grows with the run. So a run freezes
what exists as it starts, every so many firings and once a backward is set up, and
unfreezes it all when it ends (the model's own garbage cycles are collected then).

Unfreezing is all or nothing: a process that froze objects of its own before the run
(`gc.freeze()` before forking data-loader workers, to keep their pages shared) would get
them back in the collector's reach. In such a process hooktui freezes nothing.

What the interpreter keeps frozen itself does not count. On Python 3.12 every collection
moves the immortal objects it meets into the permanent generation (PEP 683: their
reference counts say nothing); a fresh 3.12.1 has 375 there (static tuples of its
deep-frozen modules), so `gc.get_freeze_count()` is never 0. Python 3.11 and 3.13 keep
none. Unfreezing them is harmless: the next collection moves them back.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_runs = 0  # runs under way (on any thread)
_freezing = False  # whether those runs freeze (nothing was frozen before the first)
_interpreters_own: int | None = None  # objects a fresh interpreter keeps frozen, once counted
_collect_first = False  # garbage with cycles to collect before the next run freezes it


def run_started() -> None:
    global _runs, _freezing, _collect_first
    with _lock:
        collect, _collect_first = _collect_first, False
        if _runs == 0:
            frozen = gc.get_freeze_count()
            _freezing = frozen == 0 or frozen <= interpreters_own()
        _runs += 1
    if collect:
        gc.collect()
    freeze()


def collect_before_next_run() -> None:
    """Much became garbage with cycles (an app closed at `R`, its history and what its
    console kept): the next run collects once before it freezes, or all of it would live
    through that run, frozen, beside what the run makes."""
    global _collect_first
    with _lock:
        _collect_first = True


def interpreters_own() -> int:
    """How many objects the interpreter keeps in the permanent generation by itself: counted
    once, in a fresh interpreter of this build (no site, no user code; ~30 ms). Where that
    cannot be run, 0: then any frozen object is taken for the process's own."""
    global _interpreters_own
    if _interpreters_own is None:
        try:
            probe = subprocess.run(
                [sys.executable, "-I", "-S", "-c", "import gc; gc.collect(); print(gc.get_freeze_count())"],
                capture_output=True, text=True, timeout=30, check=True,
            )
            _interpreters_own = int(probe.stdout.strip())
        except (OSError, ValueError, subprocess.SubprocessError):
            _interpreters_own = 0
    return _interpreters_own


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
