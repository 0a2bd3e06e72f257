"""Memory per recorded firing: the 64-block MLP (Linear(64,64)+GELU, batch 32) repeated
until one run-through makes about 100,000 firings, recorded as `hooktui trace` records
them (hooktui.record, legacy firings included).

Reports the growth of the process's resident memory (RSS) per firing, after freed heap
pages are handed back (malloc_trim): right after the run (summaries pending: snapshots
held), and after every record has been written as a JSON line, as `hooktui trace --json`
and `--save` write them (every summary computed: what `trace` holds once it printed). And
how long a full garbage collection takes with the trace alive, and where the held bytes
are: the records' own objects (each counted once, by what holds them), the glibc heap's
free bytes that malloc_trim could not hand back, and the rest. Then the same run streamed as `hooktui trace --json`
runs without --save: each firing written, then let go; its working state at its largest
(RSS at the backward's first firing, less a bare forward's) per firing. Run in its own process:
`make bench` does.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import resource
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from models import mlp_blocks  # noqa: E402

from hooktui.engine.run.session import Session, record  # noqa: E402
from hooktui.engine.records.trace_file import event_json  # noqa: E402


def rss_mb() -> float:
    """Current resident set size (Linux /proc; peak RSS elsewhere)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def trim() -> None:
    """Collect, then hand freed heap pages back to the OS (glibc), so RSS shows what is
    held rather than the run's high-water mark."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def heap_free_mb() -> float | None:
    """Free bytes inside glibc's heap (freed, not handed back: fragmentation), or None."""
    try:
        info = ctypes.CDLL("libc.so.6").mallinfo2
    except (OSError, AttributeError):
        return None
    info.restype = _MallInfo2
    return info().fordblks / 2**20


_LEAVES = (str, bytes, int, float, bool, type(None))
_GROUPS = {"Event": "events", "list": "lists (tensors, notes)", "str": "strings", "int": "ints",
           "LazyTensorRecord": "tensor records", "TensorRecord": "tensor records", "HostSnapshot": "summaries",
           "DeviceSnapshot": "summaries", "Ready": "summaries", "LazyNodeRecord": "node records",
           "NodeRecord": "node records", "_Facts": "node facts"}


def held_by_records(events: list) -> dict[str, int]:
    """Bytes of the objects the records reach (sys.getsizeof, each object once), grouped:
    packed statistics and value blocks (bytes), snapshot copies (tensor data), the record
    objects, their lists and strings. Walks only hooktui's objects and builtin containers:
    never into the model (a node's facts hold its autograd node while the run lasts)."""
    seen: set[int] = set()
    out: dict[str, int] = {}
    chunks = getattr(events, "_chunks", None)  # a HeldEvents (records/held.py): the bytes it holds
    if chunks is not None:
        out["packed firings"] = chunks.nbytes
        out["value blocks"] = events._blocks.nbytes
        out["packed keys"] = events._keys.buffer_info()[1] * 8 * 2
        events = events._tail + [e for chunk in events._cache.values() for e in chunk]
    stack = list(events)
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        kind = type(obj)
        if isinstance(obj, torch.Tensor):
            group, size = "snapshot copies (pending)", obj.untyped_storage().nbytes() + sys.getsizeof(obj)
        elif kind is bytes:
            group, size = ("value blocks" if len(obj) > 1024 else "packed statistics"), sys.getsizeof(obj)
        elif kind in _LEAVES or kind in (list, tuple, dict) or kind.__module__.startswith("hooktui"):
            group, size = _GROUPS.get(kind.__name__, "other " + kind.__name__), sys.getsizeof(obj)
        else:
            continue  # not a record's: the model's or torch's own
        out[group] = out.get(group, 0) + size
        if kind in _LEAVES:
            continue
        if kind.__name__ == "_Facts":
            stack += [obj.name, obj.seq_nr, obj.children, obj.saved, obj.changes]
        elif kind.__name__ == "Head":
            stack += [obj.shape, obj.block_shape]
        elif hasattr(kind, "__slots__") and not gc.is_tracked(obj):
            stack += [getattr(obj, n, None) for c in kind.__mro__ for n in getattr(c, "__slots__", ()) if n != "__weakref__"]
        else:
            stack += [r for r in gc.get_referents(obj) if not isinstance(r, type)]
    return out


def debug_malloc_stats() -> str | None:
    """What sys._debugmallocstats says of Python's small-object allocator (CPython only; it
    writes to the C stderr), or None."""
    import os
    import tempfile

    if not hasattr(sys, "_debugmallocstats"):
        return None
    with tempfile.TemporaryFile("w+") as out:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(out.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        return out.read()


def pymalloc_mb() -> tuple[float, float] | None:
    """Python's small-object allocator: (MB of its arenas, MB in blocks in use)."""
    text = debug_malloc_stats()
    if text is None:
        return None
    found = {}
    for line in text.splitlines():
        if "bytes/arena" in line or line.startswith("# bytes in allocated blocks"):
            found["arenas" if "bytes/arena" in line else "used"] = int(line.split("=")[1].replace(",", "")) / 2**20
    return (found["arenas"], found["used"]) if len(found) == 2 else None


def heap_state() -> tuple:
    return heap_free_mb(), pymalloc_mb()


def breakdown_line(events: list, grown_mb: float, n: int, before: tuple) -> str:
    held = held_by_records(events)
    total = sum(held.values())
    parts = ", ".join(f"{k} {v / n:.0f}" for k, v in sorted(held.items(), key=lambda kv: -kv[1]) if v / n >= 5)
    (free0, py0), (free, py) = before, heap_state()
    kb = 2**20 / n / 1024  # KB per firing in a MB
    line = f"  of which the records' own objects {total / n / 1024:.2f} KB/firing ({parts} B)"
    if py0 and py:
        line += (f"; Python's small-object arenas grew {py[0] - py0[0]:.0f} MB ({(py[0] - py0[0]) * kb:.2f} KB/firing), "
                 f"{(py[0] - py[1]) - (py0[0] - py0[1]):.0f} MB of it free blocks in arenas that stay")
    if free0 is not None and free is not None:
        line += f"; glibc heap free after trim {free0:.0f} -> {free:.0f} MB ({(free - free0) * kb:+.2f} KB/firing)"
    return line + f"; RSS growth minus the records' objects {(grown_mb * 2**20 - total) / n / 1024:.2f} KB/firing"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--firings", type=int, default=100_000)
    parser.add_argument("--held-only", action="store_true",
                        help="stop after the line on what the run holds (benchmarks/check.py's memory case)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    blocks = max(1, round(args.firings / 644 * 64))  # 64 blocks make 644 firings
    torch.manual_seed(0)
    model, x = mlp_blocks(blocks), torch.randn(32, 64)
    record(mlp_blocks(2), x)  # warm up imports and caches
    out = model(x)
    out.sum().backward()  # the model's own grads and graph, so they are not counted below
    del out
    trim()
    base = rss_mb()
    heap_before = heap_state()
    start = time.perf_counter()
    trace = record(model, x, legacy=True)
    seconds = time.perf_counter() - start
    n = len(trace.events)
    peak = rss_mb()
    trim()
    pending = rss_mb()
    if args.held_only:
        print(f"model: {blocks} x (Linear(64,64)+GELU), batch 32: {n} firings, run-through {seconds:.1f} s")
        print(f"RSS before {base:.0f} MB; held after the run {pending:.0f} MB ({(pending - base) * 1024 / n:.2f} KB/firing)")
        return
    start = time.perf_counter()
    for event in trace.events:
        event_json(event)  # every summary computed, as trace --json does
    read_seconds = time.perf_counter() - start
    trim()
    read = rss_mb()
    start = time.perf_counter()
    gc.collect()
    collect = time.perf_counter() - start
    print(f"model: {blocks} x (Linear(64,64)+GELU), batch 32: {n} firings, run-through {seconds:.1f} s "
          f"({seconds / n * 1e6:.0f} us/firing), writing every firing as JSON {read_seconds:.1f} s")
    print(f"RSS before {base:.0f} MB; at the end of the run {peak:.0f} MB; held after the run {pending:.0f} MB ({(pending - base) * 1024 * 1024 / n / 1024:.2f} KB/firing, "
          f"summaries pending); every firing written as JSON {read:.0f} MB ({(read - base) * 1024 * 1024 / n / 1024:.2f} KB/firing)")
    print(f"full gc.collect() with the trace alive: {collect * 1e3:.0f} ms")
    print(breakdown_line(trace.events, read - base, n, heap_before))
    del trace
    trim()
    # `hooktui trace --json` without --save: each firing written as it comes, then let go.
    # What it holds is the run's working state, at its largest when the backward starts
    # (the autograd graph and hooktui's hooks on it): RSS then, less what a bare forward
    # holds at the same point (the model's own activations and graph).
    base = rss_mb()
    out = model(x)
    bare_forward = rss_mb() - base
    del out
    trim()
    base = rss_mb()
    start = time.perf_counter()
    written = []
    at_backward: list[float] = []

    def on_event(event) -> None:
        if not at_backward and event.phase == "backward":
            at_backward.append(rss_mb())
        written.append(len(event_json(event)))

    Session(model, x, pause=False, legacy=True, keep_events=False).run(on_event=on_event)
    seconds = time.perf_counter() - start
    n = len(written)
    working = (at_backward[0] - base - bare_forward) if at_backward else float("nan")
    trim()
    grown = rss_mb() - base
    print(f"streamed as hooktui trace --json does (firings let go once written): {n} firings in {seconds:.1f} s; "
          f"at the backward's first firing RSS {at_backward[0] - base if at_backward else float('nan'):+.0f} MB, "
          f"a bare forward's {bare_forward:+.0f} MB: hooktui's working state {working:.0f} MB ({working * 1024 / n:.2f} KB/firing); "
          f"RSS {grown:+.0f} MB after the run ({grown * 1024 * 1024 / n / 1024:.2f} KB/firing)")


if __name__ == "__main__":
    main()
