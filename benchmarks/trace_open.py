"""Opening a large trace file: `read_trace` with msgspec's typed decoder (engine/records/
trace_file.py) beside the hand-written schema checks it replaced (benchmarks/
handwritten_reader.py, kept here for this comparison only), side by side in one run.

The file is written with hooktui's own writer from the firings of a real run (a sample
model traced once), repeated with new numbers up to the firing count asked for, so its
lines are what `trace --save` writes. Each reader is timed on the same file, alternating
(benchmarks/run.py's side_by_side; the machine is shared, so compare the ratio).

    .venv/bin/python benchmarks/trace_open.py --firings 1000000 --repeat 1
    .venv/bin/python benchmarks/trace_open.py --firings 100000 --repeat 3
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import resource
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import handwritten_reader  # noqa: E402
from run import machine, side_by_side  # noqa: E402

from hooktui.engine.records import trace_file  # noqa: E402
from hooktui.engine.records.records import Event  # noqa: E402
from hooktui.engine.run.loader import load_target  # noqa: E402
from hooktui.engine.run.session import record  # noqa: E402


def template(model_path: Path) -> tuple[object, list[Event]]:
    """The firings of one traced step of a sample model (with its values kept, as saved)."""
    loaded = load_target(model_path)
    trace = record(loaded.model, loaded.inputs, loaded.loss_fn)
    return trace.info, list(trace.events)


class Repeated(Sequence):
    """`count` firings: the template's, again and again, numbered 0, 1, 2, … ."""

    def __init__(self, events: list[Event], count: int) -> None:
        self.events, self.count = events, count

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self.count))]
        if not 0 <= i < self.count:
            raise IndexError(i)
        event = self.events[i % len(self.events)]
        return dataclasses.replace(event, index=i, forward_index=None, sub=0)


def without_values(event: Event) -> Event:
    """The firing without its kept value blocks (statistics, nodes, notes and sources stay):
    ~1 KB a line instead of ~15 KB, so that a million firings fit this machine's disk."""
    tensors = [dataclasses.replace(t, values=None, values_shape=None) for t in event.tensors]
    return dataclasses.replace(event, tensors=tensors)


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--firings", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--model", default=str(ROOT / "sample_models" / "cnn.py"))
    parser.add_argument("--values", action="store_true", help="keep the value blocks (~15 KB a firing)")
    args = parser.parse_args()

    info, events = template(Path(args.model))
    if not args.values:
        events = [without_values(e) for e in events]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "big.jsonl"
        start = time.perf_counter()
        trace_file.write_trace(path, info, Repeated(events, args.firings))
        written = time.perf_counter() - start
        size = os.path.getsize(path)
        print(machine())
        print(f"{args.firings:,} firings ({len(events)} of {Path(args.model).name} repeated, "
              f"{'with' if args.values else 'without'} value blocks), {size / 2**20:,.0f} MiB, "
              f"written in {written:.1f} s")
        if args.firings <= 100_000:  # the two readers agree (two copies of a million firings: too much memory)
            new, old = trace_file.read_trace(path), handwritten_reader.read_trace(path)
            assert new[0] == old[0] and len(new[1]) == len(old[1]) == args.firings
            assert all(a == b for a, b in zip(new[1], old[1]))
            del new, old
            gc.collect()

        def read(reader):
            def run():
                loaded = reader.read_trace(path)
                assert len(loaded[1]) == args.firings
                del loaded
                gc.collect()
            return run

        if args.repeat > 1:  # alternating, after one warm-up read each
            msgspec_s, handwritten_s = side_by_side([read(trace_file), read(handwritten_reader)], args.repeat)
        else:  # a million firings: one read each, one after the other, no warm-up
            msgspec_s, handwritten_s = (timed(read(trace_file)), timed(read(handwritten_reader)))
        print(f"read_trace, median of {args.repeat}: msgspec {msgspec_s:.2f} s ({msgspec_s / args.firings * 1e6:.1f} us/firing), "
              f"hand-written {handwritten_s:.2f} s ({handwritten_s / args.firings * 1e6:.1f} us/firing): "
              f"{handwritten_s / msgspec_s:.2f}x faster")
        print(f"peak memory of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.1f} GiB")


if __name__ == "__main__":
    main()
