"""What one module call keeps alive from its forward to its backward (issue 33, memory).

The number of pymalloc arenas the app keeps after a run is the run's peak of live Python
objects, and that peak is at the backward's start: every forward firing's record and every
module call's state for the backward (tracer.py's `_Call`, call_outputs.py's slots, the
input metadata and gradient edges) are alive then. This runs `hooktui.record` on
N x (Linear(64,64)+GELU), batch 32, 1 thread, with tracemalloc on from the root's first
forward pre-hook to the backward's start (the outermost `Tracer.backward_pass`), and
prints what was allocated in between and is still alive, a module call at a time:

- by the line that allocated it: the innermost frame inside the engine's `hooktui`
  package (else the innermost frame), its bytes and memory blocks a call (a block is one
  Python object, or the item array of a list / the table of a dict or set);
- by part of the engine (capture/, records/, summaries/, autograd/, torch, other);
- then what placing the backward's watches added (`Tracer._place_watches`), by line;
- the objects the collector tracks, by type, a call, alive once the watches are placed.

Blocks CPython keeps on its free lists (tuples, lists, dicts freed into them) count as alive:
on a small model that is a few blocks a call; the 1,000-block figures are the better ones.

    python benchmarks/call_state.py [--blocks 64 1000] [--top 30] [--tree PATH]

`--tree PATH`: measure another checkout's engine (as firing_profile.py's `--tree`: run it
with that checkout's interpreter, PATH/.venv/bin/python), to set two trees side by side.
A warm-up run comes first, so what a first run caches (the model's walk, interned names)
is not counted.
"""

from __future__ import annotations

import argparse
import gc
import linecache
import sys
import tracemalloc
from collections import Counter
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
# The engine measured: this checkout's, or the one named by --tree (read before the imports).
TREE = Path(sys.argv[sys.argv.index("--tree") + 1]).resolve() if "--tree" in sys.argv[:-1] else ROOT
sys.path.insert(0, str(TREE))
sys.path.insert(0, str(ROOT / "benchmarks"))
import hooktui  # noqa: E402,F401  (from TREE, before run.py puts this checkout first on the path)

from models import mlp_case  # noqa: E402
from run import machine  # noqa: E402

from hooktui.engine.capture import tracer as tracer_module  # noqa: E402
from hooktui.engine.run import session  # noqa: E402

PACKAGE = str(Path(hooktui.__file__).resolve().parent)
SKIP = (tracemalloc.__file__, __file__)


class Probe:
    """Snapshots at the root's first forward pre-hook and at the outermost backward's start."""

    def __init__(self) -> None:
        self.before: tracemalloc.Snapshot | None = None
        self.at_backward: tracemalloc.Snapshot | None = None
        self.types_before: Counter | None = None
        self.types_watched: Counter | None = None
        self.watched: tracemalloc.Snapshot | None = None
        self.calls = 0

    def install(self):
        cls = tracer_module.Tracer
        pre, backward_pass, place_watches = cls._pre_hook, cls.backward_pass, cls._place_watches
        probe = self

        def _pre_hook(tracer, module, args, kwargs):
            if probe.before is None:
                probe.types_before = _gc_types()
                probe.before = tracemalloc.take_snapshot()
            probe.calls += 1
            return pre(tracer, module, args, kwargs)

        def _backward_pass(tracer, *args, **kwargs):
            if probe.at_backward is None and tracer.backward_depth == 0:
                probe.at_backward = tracemalloc.take_snapshot()
            return backward_pass(tracer, *args, **kwargs)

        def _place_watches(tracer, *args, **kwargs):
            try:
                return place_watches(tracer, *args, **kwargs)
            finally:
                if probe.watched is None and tracer.backward_depth == 1:
                    probe.watched = tracemalloc.take_snapshot()
                    probe.types_watched = _gc_types()  # after: its collection moves no traced block

        cls._pre_hook, cls.backward_pass, cls._place_watches = _pre_hook, _backward_pass, _place_watches

        def restore() -> None:
            cls._pre_hook, cls.backward_pass, cls._place_watches = pre, backward_pass, place_watches

        return restore


def _gc_types() -> Counter:
    """The objects the collector tracks, by type, those a run froze included (it freezes
    what exists every so many firings, collector.py; frozen again after the count)."""
    frozen = gc.get_freeze_count()
    gc.unfreeze()
    for _ in range(4):  # garbage goes; tuples of atoms are untracked by a collection, a level a time
        gc.collect()  # (tracemalloc's snapshots hold traces: tuples of tuples of ints and strings)
    counts = Counter(type(o).__name__ for o in gc.get_objects())
    if frozen:
        gc.freeze()
    return counts


def _site(traceback: tracemalloc.Traceback) -> tracemalloc.Frame:
    """The innermost frame inside the engine's package, else the innermost frame."""
    for frame in reversed(traceback):  # a Traceback runs from the oldest frame to the newest
        if frame.filename.startswith(PACKAGE):
            return frame
    return traceback[-1]


def _part(filename: str) -> str:
    if filename.startswith(PACKAGE):
        rel = Path(filename).relative_to(PACKAGE)
        return str(rel.parent) + "/" if len(rel.parts) > 1 else str(rel)
    if "/torch/" in filename:
        return "torch"
    return "other"


def _label(frame: tracemalloc.Frame) -> str:
    filename = frame.filename
    short = str(Path(filename).relative_to(PACKAGE)) if filename.startswith(PACKAGE) else Path(filename).name
    code = linecache.getline(filename, frame.lineno).strip()
    return f"{short}:{frame.lineno}  {code[:70]}"


def _by_line(newer: tracemalloc.Snapshot, older: tracemalloc.Snapshot) -> tuple[Counter, Counter]:
    """(bytes, blocks) made between the two snapshots and alive at the newer, by site."""
    keep = [tracemalloc.Filter(False, name) for name in SKIP]
    size, blocks = Counter(), Counter()
    for stat in newer.filter_traces(keep).compare_to(older.filter_traces(keep), "traceback"):
        if stat.size_diff <= 0 and stat.count_diff <= 0:
            continue
        frame = _site(stat.traceback)
        size[(frame.filename, frame.lineno)] += stat.size_diff
        blocks[(frame.filename, frame.lineno)] += stat.count_diff
    return size, blocks


def _print_lines(size: Counter, blocks: Counter, calls: int, top: int) -> None:
    print(f"{'bytes/call':>10} {'blocks/call':>11}  line")
    for key, n in size.most_common(top):
        if n / calls < 1:
            break
        print(f"{n / calls:>10.1f} {blocks[key] / calls:>11.2f}  {_label(tracemalloc.Frame(key))}")
    print()


def measure(blocks: int, top: int) -> None:
    _, model, x, loss_fn = mlp_case(blocks)
    session.record(model, x, loss_fn)  # warm-up: the walk kept, names interned
    gc.collect()
    probe = Probe()
    restore = probe.install()
    tracemalloc.start(16)
    try:
        trace = session.record(model, x, loss_fn)
    finally:
        restore()
        tracemalloc.stop()
    calls = probe.calls
    size, n_blocks = _by_line(probe.at_backward, probe.before)
    total, total_blocks = sum(size.values()), sum(n_blocks.values())
    forward = sum(1 for e in trace.events if e.hook in ("forward_pre", "forward"))
    print(f"model: {blocks} x (Linear(64,64)+GELU), batch 32: {calls} module calls, {forward} forward firings, "
          f"{len(trace.events)} firings")
    print(f"alive at the backward's start, made since the first pre-hook: {total / calls:,.0f} bytes and "
          f"{total_blocks / calls:.1f} blocks a call ({total / forward:,.0f} bytes, {total_blocks / forward:.1f} blocks "
          "a forward firing)")
    print()
    parts, part_blocks = Counter(), Counter()
    for key, n in size.items():
        parts[_part(key[0])] += n
        part_blocks[_part(key[0])] += n_blocks[key]
    print(f"{'part':28} {'bytes/call':>10} {'blocks/call':>11}")
    for part, n in parts.most_common():
        print(f"{part:28} {n / calls:>10.0f} {part_blocks[part] / calls:>11.2f}")
    print()
    _print_lines(size, n_blocks, calls, top)
    watch_size, watch_blocks = _by_line(probe.watched, probe.at_backward)
    print(f"then, the backward's watches placed (Tracer._place_watches): +{sum(watch_size.values()) / calls:,.0f} bytes "
          f"and +{sum(watch_blocks.values()) / calls:.1f} blocks a call")
    _print_lines(watch_size, watch_blocks, calls, max(top // 2, 1))
    grown = probe.types_watched - probe.types_before
    grown.pop("Snapshot", None)
    print("objects the collector tracks, made since the first pre-hook and alive once the watches are placed, a call: "
          + ", ".join(f"{name} {n / calls:.2f}" for name, n in grown.most_common(12) if n / calls >= 0.01))
    print()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--blocks", type=int, nargs="+", default=[64, 1000])
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose engine is measured")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"machine: {machine()}")
    print(f"engine: {Path(PACKAGE).parent}")
    print()
    for blocks in args.blocks:
        measure(blocks, args.top)


if __name__ == "__main__":
    main()
