"""The app's requests that read the whole history, on a packed history of ~36k firings.

The history is the app's (`ui/history.py`: a HeldEvents that packs while the run goes on),
filled as the app fills it, a firing at a time, by a run of benchmarks/memory.py's MLP
(`--blocks` x (Linear(64,64)+GELU), batch 32, legacy firings recorded and hidden as `hooktui
open` does; a forward hook of the model's own on every `--user-hook-every`-th Linear, so the
Hooks screen has hits to count), then packed whole (`pack()`: every chunk but the tail's).

Prints:
- live packing: the time spent packing chunks while the run went on (`_pack_chunk`, on the
  thread that appends: the app's), per firing packed;
- the statistics' bytes (records/stats_bytes.py): `pack_stats` and `unpack_stats` of one
  TensorStats, as every lazy summary packs them once and every read unpacks them;
- each request, best of `--repeat`, the store's cache of decoded chunks emptied (and a
  collection made) before each:
  the timeline's filter `&` (Timeline._scan over every firing, legacy ones hidden), the
  overview's rows (`w`: CallRows.extend), the save prompt (`s`: the count it shows) and the
  firings a save then writes, the Hooks screen's hit counts (`H`) and the model's hooks a
  recorded trace lists (RecordedSource.user_hooks, app.py on mount), and the first scan of
  each of a few `/` searches (ui/search.py Matches: every match found, as `/` + enter and
  `L` make the app find them); a few of them also on the history as the run left it, before
  it is packed whole (the last firings, summaries pending, held as records: what the app has).

Run against another tree (`--tree /path/to/checkout`: its `hooktui` is imported instead)
to compare: the script reads what that tree's app reads for each request.
`.venv/bin/python benchmarks/packed_reads.py` (~1 minute).

`--layout-against /path/to/checkout`: instead, in one process, alternating, that tree's
`stats_bytes` (pack, unpack, the NaN/Inf counts of one TensorStats) and `held._encode`
(a settled chunk packed, as the history packs while the run goes on: 1,000 blocks) beside
this tree's. Its held.py imports this tree's records (its relative imports), so both
encoders copy the same summaries' bytes: the rows compare held.py's own work.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from array import array
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The `/` searches timed (the modules are named 0 .. 5961): a module word, a kind, a phase
# and a module, a tensor name, a glob with both, the NaN word (no firing holds one here).
SEARCHES = ("123", "kind:backward_pre", "phase:bwd 17", "tensor:grad_input", "kind:backward* tensor:grad_output[0] 1?3",
            "nan")
SEARCHES_AS_LEFT = ("kind:backward_pre", "tensor:grad_input", "nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=2981, help="MLP blocks (2,981: 35,777 firings)")
    parser.add_argument("--user-hook-every", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose hooktui is measured")
    parser.add_argument("--layout-against", type=Path, default=None, help="compare the stats layout and packing with this checkout's")
    args = parser.parse_args()
    if args.layout_against is not None:
        layout_against(args.layout_against)
        return
    sys.path.insert(0, str(args.tree.resolve()))
    sys.path.insert(0, str(ROOT / "benchmarks"))

    import torch

    from models import mlp_blocks

    from hooktui.engine.analysis.flow import CallRows
    from hooktui.engine.analysis.search import parse_search
    from hooktui.engine.records import held, stats_bytes
    from hooktui.engine.records.records import TensorStats
    from hooktui.engine.run.session import Session
    from hooktui.ui.history import History
    from hooktui.ui.search import Matches
    from hooktui.ui.screens.user_hooks import hit_counts
    from hooktui.ui.sources import RecordedSource
    from hooktui.ui.widgets.timeline import Timeline
    import hooktui

    assert Path(hooktui.__file__).resolve().is_relative_to(args.tree.resolve()), hooktui.__file__
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = mlp_blocks(args.blocks)
    for at, layer in enumerate(model):
        if isinstance(layer, torch.nn.Linear) and at % (2 * args.user_hook_every) == 0:
            layer.register_forward_hook(lambda module, inputs, output: None)

    history = History()
    history.hidden = {"legacy_backward"}
    packing = []  # seconds per chunk packed while the run went on
    pack_chunk = held.HeldEvents._pack_chunk

    def timed_pack(self, *a, **k):
        start = time.perf_counter()
        pack_chunk(self, *a, **k)
        packing.append(time.perf_counter() - start)

    held.HeldEvents._pack_chunk = timed_pack
    session = Session(model, torch.randn(32, 64), pause=False, legacy=True, keep_events=False)
    session.gate.skip_hooks.add("legacy_backward")
    start = time.perf_counter()
    session.run(on_event=lambda event: history.extend([event]))
    ran = time.perf_counter() - start
    held.HeldEvents._pack_chunk = pack_chunk
    events = history.events
    live = len(packing) * held.CHUNK
    # The `/` search on the history as the run leaves it in the app (its last firings, whose
    # summaries are pending, held as records): the first scan (NaN counts taken then) and the best.
    not_packed = len(events) - events.packed
    as_left = {query: _timings(lambda query=query: len(Matches(parse_search(query), history)), events, args.repeat)
               for query in SEARCHES_AS_LEFT}
    events.pack()  # the rest too (computes the pending summaries): every read below unpacks
    load = os.getloadavg()[0]
    print(f"tree {args.tree} ({hooktui.__file__})")
    print(f"{len(events)} firings ({events.packed} packed; {live} of them while the run went on), "
          f"run {ran:.1f} s, load {load:.1f}")
    names = ("_hooks", "_phases", "_modules", "_calls", "_user_hooks", "_nonfinite", "_names")
    columns = [getattr(events, name, None) for name in names]
    column_bytes = sum(len(c) * getattr(c, "itemsize", 1 if isinstance(c, bytearray) else 8) for c in columns if c is not None)
    print(f"the store's columns (hook, phase, module, call, user-hook positions, NaN/Inf flags, tensor names): "
          f"{column_bytes / len(events):.1f} bytes a firing")
    if packing:
        print(f"live packing: {statistics.median(packing) * 1e3:.3f} ms a chunk median, "
              f"{sum(packing) / live * 1e6:.1f} us a firing on average ({len(packing)} chunks)")

    stats = TensorStats(count=2048, finite=2047, min=-3.25, max=4.5, mean=0.01, std=1.02, absmax=4.5, norm=45.1, nan=1,
                        nonfinite=1, zeros=3, hist=[1, 5, 20, 80, 200, 400, 500, 400, 250, 100, 50, 20, 10, 5, 3, 2],
                        hist_range=[-3.25, 4.5])
    packed = stats_bytes.pack_stats(stats)
    n = 100_000
    best_pack = min(_timed(lambda: stats_bytes.pack_stats(stats), n) for _ in range(3))
    best_unpack = min(_timed(lambda: stats_bytes.unpack_stats(packed), n) for _ in range(3))
    print(f"stats bytes: pack {best_pack * 1e6:.2f} us, unpack {best_unpack * 1e6:.2f} us, {len(packed)} bytes")

    hidden = history.hidden
    timeline = Timeline(history, hidden=hidden)

    def filter_rows():
        timeline.filter_text = "1"
        timeline._rows, timeline._scanned = array("q"), 0
        timeline._scan()
        return len(timeline._rows)

    def overview_rows():
        calls = CallRows()
        calls.extend(events)
        return len(calls)

    def save_prompt():
        if hasattr(history, "shown_firings"):  # this tree's app
            return history.shown_total
        return len([e for e in events if e.hook not in hidden])  # main: app.py's action_save

    def save_firings():
        if hasattr(history, "shown_firings"):
            return len(history.shown_firings(len(history), frozenset(hidden)))
        return len([e for e in events if e.hook not in hidden])  # main: the list the prompt kept

    info = session.trace.info
    recorded = RecordedSource(info, [])
    requests = {
        "timeline filter `&` (every firing checked)": filter_rows,
        "overview `w` (its rows)": overview_rows,
        "save `s`: the prompt's count": save_prompt,
        "save: the firings written, collected": save_firings,
        "Hooks screen `H`: hit counts": lambda: sum(hit_counts(events).values()),
        "a recorded trace's hooks (app.py on mount)": lambda: len(recorded.user_hooks(events)),
    }

    def first_scan(query: str):
        # What `/` + enter (and `L`, which rescans) makes the app find: every match counted.
        return lambda: len(Matches(parse_search(query), history))

    for query in SEARCHES:
        requests[f"search /{query}"] = first_scan(query)
    for name, request in requests.items():
        times, result = _timings(request, events, args.repeat)
        print(f"{name:48s} {min(times) * 1e3:9.2f} ms best of {args.repeat} (result {result})")
    for query, (times, result) in as_left.items():
        print(f"search /{query}, as the run left the history ({not_packed} firings not packed): "
              f"{times[0] * 1e3:.2f} ms the first, {min(times) * 1e3:.2f} ms best of {args.repeat} (result {result})")


def _timings(request, events, repeat: int) -> tuple[list[float], object]:
    """Seconds of each of `repeat` calls of `request`, the store's decoded chunks dropped and a
    collection made before each (the lists an earlier request made, not counted in this one)."""
    times = []
    for _ in range(repeat):
        events._cache.clear()
        gc.collect()
        start = time.perf_counter()
        result = request()
        times.append(time.perf_counter() - start)
    return times, result


def layout_against(other: Path) -> None:
    import importlib.util

    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import torch

    from models import mlp_blocks

    from hooktui.engine.records import held, stats_bytes
    from hooktui.engine.records.records import TensorStats
    from hooktui.engine.run.session import Session

    def load(name: str, path: Path):
        spec = importlib.util.spec_from_file_location(f"hooktui.engine.records.{name}", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module

    their_bytes = load("stats_bytes_other", other / "hooktui/engine/records/stats_bytes.py")
    their_held = load("held_other", other / "hooktui/engine/records/held.py")
    print(f"load {os.getloadavg()[0]:.1f}; other: {other}")
    stats = TensorStats(count=2048, finite=2047, min=-3.25, max=4.5, mean=0.01, std=1.02, absmax=4.5, norm=45.1, nan=1,
                        nonfinite=1, zeros=3, hist=[1, 5, 20, 80, 200, 400, 500, 400, 250, 100, 50, 20, 10, 5, 3, 2],
                        hist_range=[-3.25, 4.5])
    rows: dict[str, list[float]] = {}
    for _ in range(5):
        for side, module in (("other", their_bytes), ("this", stats_bytes)):
            packed = module.pack_stats(stats)
            for what, call in (("pack_stats", lambda: module.pack_stats(stats)), ("unpack_stats", lambda: module.unpack_stats(packed)),
                               ("counts_of", lambda: module.counts_of(packed))):
                rows.setdefault(f"{what} {side}", []).append(_timed(call, 50_000) * 1e6)
    for name, values in rows.items():
        print(f"{name:20s} best {min(values):.2f} us, median {statistics.median(values):.2f} us")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    made = []
    held.PACK_AFTER = 1 << 40
    Session(mlp_blocks(1000), torch.randn(32, 64), pause=False, legacy=True, keep_events=False).run(on_event=made.append)
    chunks = [made[at:at + held.CHUNK] for at in range(0, len(made) - held.CHUNK, held.CHUNK)
              if all(held._settled(e) for e in made[at:at + held.CHUNK])]

    def encode(module) -> float:
        blocks = module._Slab()
        start = time.perf_counter()
        for part in chunks:
            module._encode(part, blocks, {}, True)
        return (time.perf_counter() - start) / len(chunks) / held.CHUNK * 1e6

    times: dict[str, list[float]] = {"other": [], "this": []}
    for _ in range(9):
        for side, module in (("other", their_held), ("this", held)):
            gc.collect()
            times[side].append(encode(module))
    for side, values in times.items():
        print(f"a settled chunk encoded, {side}: best {min(values):.1f} us a firing, median {statistics.median(values):.1f} "
              f"({len(chunks)} chunks of {len(made)} firings)")


def _timed(call, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        call()
    return (time.perf_counter() - start) / n


if __name__ == "__main__":
    main()
