"""Where the app's memory per held firing goes (issue 33): the app in this process, headless.

`benchmarks/app_memory.py` reads the app's RSS from outside; this runs the same app
(HooktuiApp on a LiveSource, Textual's `run_test` at 120x40, legacy firings recorded and
hidden as `hooktui open` does) on benchmarks/memory.py's MLP, presses `c`, and once the
run has finished takes the growth since the pause at the first firing apart:

- the process's RSS, glibc's heap (every malloc arena: in use and free bytes) and Python's
  small-object allocator (pymalloc: arenas, bytes in allocated blocks, bytes in free blocks);
- the bytes of tensor storage alive (the parameters, the run's final .grad the session keeps
  for the console, the snapshots whose summaries are still pending);
- then every pending summary resolved, and then the app's history emptied, each followed by
  a collection and malloc_trim: what RSS is left with no record at all is free space and
  objects that are not records.

`--let-go N` (an experiment, not the app): the history is a plain list again, and each record
is let go N firings after it reaches it (the slot then holds the first firing's record, so
what the app draws is wrong): records dying younger than the app's packing lets them (it
packs a chunk once its summaries are settled, ~5,000 firings behind on this model), and
with them the snapshots of the values pane that the app keeps.

`--clear-caches` (an experiment, not the app): at the run's end, first every bounded cache
Textual and Rich filled (each `functools.lru_cache` in their modules, each
`textual.cache.LRUCache`/`FIFOCache` alive, `linecache`) is cleared. `--arenas` says which
objects hold the pymalloc arenas the run added, at the run's end and once the history is
emptied: each object reachable from the collector's is placed in its arena by its pool's
header (CPython 3.11's obmalloc layout, 64-bit: `arenaindex` at byte 32 of the 16 KiB pool),
and arenas that held none of the objects alive at the pause are the run's; with `--trace`,
by the file:line that made them too.

`--trace` (slow: use a few thousand firings) adds tracemalloc: the Python allocations made
while the model ran that are alive at the run's end, by file:line, and those alive once the
history is emptied (what keeps pymalloc's arenas from being handed back).

Run with `.venv/bin/python benchmarks/app_memory_parts.py --firings 30000` (Linux, glibc).
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import gc
import linecache
import re
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

import torch
from torch import nn

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hooktui.engine.run.session import Session  # noqa: E402
from hooktui.ui.app import HooktuiApp  # noqa: E402
from hooktui.ui.sources import LiveSource  # noqa: E402
from memory import debug_malloc_stats  # noqa: E402  (benchmarks/memory.py)


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]


_libc = ctypes.CDLL("libc.so.6")
_libc.mallinfo2.restype = _MallInfo2


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def glibc() -> tuple[float, float]:
    """(in use, free) MB over every malloc arena."""
    info = _libc.mallinfo2()
    return info.uordblks / 2**20, info.fordblks / 2**20


def pymalloc() -> tuple[int, float, float]:
    """(arenas, MB in allocated blocks, MB in free blocks) of Python's small-object allocator
    (all 0 under tracemalloc, which takes the allocator's place)."""
    stats = debug_malloc_stats() or ""

    def number(label: str) -> int:
        found = re.search(rf"# {label}\s*=\s*([\d,]+)", stats)
        return int(found.group(1).replace(",", "")) if found else 0

    return (number("arenas allocated current"), number("bytes in allocated blocks") / 2**20,
            number("bytes in available blocks") / 2**20)


def storage_mb() -> float:
    """Tensor storage alive (each storage once)."""
    if tracemalloc.is_tracing():
        return 0.0  # its storage objects would count as allocations of the run
    seen: dict[int, int] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # isinstance on torch's deprecated aliases warns
        objects = [obj for obj in gc.get_objects() if isinstance(obj, torch.Tensor)]
    for obj in objects:
        try:
            storage = obj.untyped_storage()
            seen[storage.data_ptr()] = storage.nbytes()
        except Exception:
            continue
    return sum(seen.values()) / 2**20


def cached_in_textual_and_rich() -> tuple[list, list]:
    """(the functools.lru_cache wrappers in Textual's and Rich's modules, the Textual
    LRUCache/FIFOCache objects alive)."""
    from textual.cache import FIFOCache, LRUCache

    wrappers: dict[int, object] = {}
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] not in ("rich", "textual") or module is None:
            continue
        for value in list(vars(module).values()):
            for item in (vars(value).values() if isinstance(value, type) else (value,)):
                function = getattr(item, "__func__", item)
                function = getattr(function, "fget", function)  # a property's
                if hasattr(function, "cache_info") and hasattr(function, "cache_clear"):
                    wrappers[id(function)] = function
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        caches = [obj for obj in gc.get_objects() if isinstance(obj, (LRUCache, FIFOCache))]
    return list(wrappers.values()), caches


def clear_caches() -> str:
    wrappers, caches = cached_in_textual_and_rich()
    entries = sum(w.cache_info().currsize for w in wrappers), sum(len(c) for c in caches)
    for wrapper in wrappers:
        wrapper.cache_clear()
    for cache in caches:
        cache.clear()
    linecache.clearcache()
    return (f"{len(wrappers)} lru_caches ({entries[0]} entries), {len(caches)} Textual caches "
            f"({entries[1]} entries) and linecache cleared")


def reachable() -> dict[int, object]:
    """Every object reachable from those the collector tracks (strings, numbers and other
    untracked ones included), by id."""
    stack = gc.get_objects()
    seen: dict[int, object] = {}  # made after the list: not walked itself (nor its keys)
    while stack:
        obj = stack.pop()
        if id(obj) in seen or obj is seen or obj is stack:
            # The walk reaches its own dict and list (through the running coroutine): not
            # the app's objects, nor are the keys it makes.
            continue
        seen[id(obj)] = obj
        stack.extend(ref for ref in gc.get_referents(obj) if id(ref) not in seen)
    return seen


_POOL = 16384  # CPython 3.11's pymalloc pool on 64-bit; its header's arenaindex is at byte 32


def arena_of(obj) -> int | None:
    """The index of the pymalloc arena `obj` is in (None: larger than pymalloc's 512 bytes)."""
    if sys.getsizeof(obj, 1024) > 512:
        return None
    return ctypes.c_uint.from_address((id(obj) & ~(_POOL - 1)) + 32).value


def arenas_in_use() -> set[int]:
    return {a for a in map(arena_of, reachable().values()) if a is not None}


def what_holds_the_runs_arenas(before: set[int], firings: int) -> None:
    """Which objects hold the arenas no object alive at the pause was in."""
    held: dict[int, list] = {}
    for obj in reachable().values():
        arena = arena_of(obj)
        if arena is not None and arena not in before:
            held.setdefault(arena, []).append(obj)
    counts = sorted(len(objects) for objects in held.values())
    print(f"    the run's arenas holding objects: {len(held)}; objects in each: {counts}")
    kinds: dict[tuple[str, str], tuple[int, set]] = {}
    for arena, objects in held.items():
        for obj in objects:
            made = tracemalloc.get_object_traceback(obj) if tracemalloc.is_tracing() else None
            where = "" if made is None else f"  {made[0].filename.split('site-packages/')[-1].replace(str(ROOT) + '/', '')}:{made[0].lineno}"
            count, arenas = kinds.get((type(obj).__name__, where), (0, set()))
            arenas.add(arena)
            kinds[(type(obj).__name__, where)] = (count + 1, arenas)
    print("    objects in them (a firing), arenas they are in, type, where made:")
    for (kind, where), (count, arenas) in sorted(kinds.items(), key=lambda item: -item[1][0])[:25]:
        print(f"      {count / firings:5.2f} {len(arenas):4d}  {kind}{where}")


def settle(trim: bool = True) -> None:
    gc.collect()
    if trim:  # what the session does itself at the end of a run of 20,000 firings or more
        _libc.malloc_trim(0)


def model_of(blocks: int) -> nn.Module:
    torch.manual_seed(0)
    layers: list[nn.Module] = []
    for _ in range(blocks):
        layers += [nn.Linear(64, 64), nn.GELU()]
    model = nn.Sequential(*layers)
    model(torch.randn(32, 64)).sum().backward()  # as app_memory.py's model file: one bare step first
    model.zero_grad(set_to_none=True)
    return model


def let_records_go(after: int) -> None:
    """The `--let-go` experiment: History keeps only its last `after` records."""
    from hooktui.ui.history import History

    extend, init = History.extend, History.__init__

    class Overwritable(list):  # a list it can overwrite (the history packs itself otherwise)
        def hook_at(self, position: int) -> str:
            return self[position].hook

    def init_with_a_list(self):
        init(self)
        self.events = Overwritable()

    def extend_then_let_go(self, events):
        added = extend(self, events)
        done = getattr(self, "_let_go", 1)
        for position in range(done, len(self.events) - after):
            self.events[position] = self.events[0]
        self._let_go = max(done, len(self.events) - after)
        return added

    History.extend = extend_then_let_go
    History.__init__ = init_with_a_list


def _line(size: int, count: int, firings: int, frame) -> str:
    where = frame.filename.split("site-packages/")[-1].replace(str(ROOT) + "/", "")
    return f"    {size / firings:7.1f} B {count / firings:5.2f} objects a firing  {where}:{frame.lineno}"


def state(label: str, base, firings: int) -> tuple:
    rss = rss_mb()
    used, free = glibc()
    arenas, blocks, available = pymalloc()
    print(f"{label}: RSS +{rss - base[0]:.0f} MB ({(rss - base[0]) * 1024 / firings:.2f} KB a firing); "
          f"glibc in use +{used - base[1]:.0f} MB, free +{free - base[2]:.0f} MB; "
          f"pymalloc arenas +{arenas - base[3]} ({arenas}), allocated blocks +{blocks - base[4]:.0f} MB, "
          f"free blocks +{available - base[5]:.0f} MB; tensor storage alive {storage_mb():.0f} MB")
    return rss, used, free, arenas, blocks, available


async def measure(blocks: int, trace: bool, clear: bool = False, arenas: bool = False) -> None:
    torch.set_num_threads(1)
    model = model_of(blocks)
    session = Session(model, torch.randn(32, 64), pause=True, legacy=True, keep_events=False)
    session.gate.skip_hooks.add("legacy_backward")
    app = HooktuiApp(LiveSource(session), show_timings=False)
    async with app.run_test(size=(120, 40), notifications=False) as pilot:
        while not (app.state == "paused" and app.history.cursor == 0):
            await pilot.pause(0.05)
        await pilot.pause(0.5)
        before = arenas_in_use() if arenas else set()
        settle(trim=False)  # as app_memory.py: the run's high-water marks count
        if trace:
            tracemalloc.start(1)
        base = (rss_mb(), *glibc(), *pymalloc(), storage_mb())
        start_snapshot = tracemalloc.take_snapshot() if trace else None
        started = time.monotonic()
        await pilot.press("c")
        while app.state != "finished":
            await pilot.pause(0.1)
        await pilot.pause(1.0)
        ran = time.monotonic() - started
        firings = len(app.history)
        settle()
        print(f"the app, {blocks} x (Linear(64,64)+GELU): {firings} firings, c to the end {ran:.0f} s; "
              f"held packed: {getattr(app.history.events, 'packed', 0)} firings")
        print(f"paused at the first firing: RSS {base[0]:.0f} MB, glibc in use {base[1]:.0f} MB free {base[2]:.0f} MB, "
              f"pymalloc {base[3]} arenas ({base[4]:.0f} MB in allocated blocks)")
        params = sum(p.untyped_storage().nbytes() for p in model.parameters()) / 2**20
        print(f"  the model's parameters: {params:.0f} MB of tensor storage")
        state("run's end", base, firings)
        if clear:
            print(f"  {clear_caches()}")
            settle()
            state("  then", base, firings)
        if arenas:
            what_holds_the_runs_arenas(before, firings)
        grads = sum(g.untyped_storage().nbytes() for g in (session.final_grads or {}).values()) / 2**20
        print(f"  of the tensor storage: the run's final .grad kept for the console {grads:.0f} MB "
              f"({grads * 1024 / firings:.2f} KB a firing)")
        if trace:
            grown = tracemalloc.take_snapshot().compare_to(start_snapshot, "lineno")
            total = sum(s.size_diff for s in grown)
            print(f"  Python allocations made during the run and alive: {total / firings:.0f} B a firing; the largest:")
            for s in grown[:25]:
                print(_line(s.size_diff, s.count_diff, firings, s.traceback[0]))
        started = time.monotonic()
        for event in app.history.events:
            for tensor in event.tensors:
                tensor.stats  # noqa: B018 (resolves a pending summary)
        settle()
        state(f"every pending summary resolved ({time.monotonic() - started:.1f} s)", base, firings)
        app.history.events.clear()
        app.lower.events = app.history.events
        settle()
        state("the app's history emptied (no record left)", base, firings)
        if arenas:
            what_holds_the_runs_arenas(before, firings)
        if trace:
            left = tracemalloc.take_snapshot().compare_to(start_snapshot, "lineno")
            total = sum(s.size_diff for s in left)
            count = sum(s.count_diff for s in left)
            print(f"  Python allocations made during the run still alive: {total / firings:.0f} B, "
                  f"{count / firings:.2f} objects a firing; the largest:")
            for s in left[:20]:
                print(_line(s.size_diff, s.count_diff, firings, s.traceback[0]))
        await pilot.press("q")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--firings", type=int, default=30_000)
    parser.add_argument("--trace", action="store_true",
                        help="tracemalloc by file:line (slow; pymalloc's and the tensors' figures read 0 then)")
    parser.add_argument("--let-go", type=int, default=0, metavar="N",
                        help="experiment: each record let go N firings after it arrives (see above)")
    parser.add_argument("--clear-caches", action="store_true",
                        help="experiment: Textual's and Rich's bounded caches cleared at the run's end (see above)")
    parser.add_argument("--arenas", action="store_true", help="which objects hold the arenas the run added (see above)")
    args = parser.parse_args()
    if args.let_go:
        let_records_go(args.let_go)
    asyncio.run(measure(max(1, round(args.firings / 644 * 64)), args.trace, args.clear_caches, args.arenas))


if __name__ == "__main__":
    main()
