"""Memory per recorded firing: the 64-block MLP (Linear(64,64)+GELU, batch 32) repeated
until one run-through makes about 100,000 firings, recorded as `hooktui trace` records
them (hooktui.record, legacy firings included).

Reports the growth of the process's resident memory (RSS) per firing, after freed heap
pages are handed back (malloc_trim): right after the run (summaries pending: snapshots
held), and after every record has been written as a JSON line, as `hooktui trace --json`
and `--save` write them (every summary computed: what `trace` holds once it printed). And
how long a full garbage collection takes with the trace alive. Then the same run streamed as `hooktui trace --json`
runs without --save: each firing written, then let go. Run in its own process:
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

from hooktui.engine.session import Session, record  # noqa: E402
from hooktui.engine.trace_file import event_json  # noqa: E402


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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--firings", type=int, default=100_000)
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
    start = time.perf_counter()
    trace = record(model, x, legacy=True)
    seconds = time.perf_counter() - start
    n = len(trace.events)
    peak = rss_mb()
    trim()
    pending = rss_mb()
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
    del trace
    trim()
    # `hooktui trace --json` without --save: each firing written as it comes, then let go.
    base = rss_mb()
    start = time.perf_counter()
    written = []
    Session(model, x, pause=False, legacy=True, keep_events=False).run(on_event=lambda e: written.append(len(event_json(e))))
    seconds = time.perf_counter() - start
    trim()
    grown = rss_mb() - base
    print(f"streamed as hooktui trace --json does (firings let go once written): {len(written)} firings in {seconds:.1f} s, "
          f"RSS {grown:+.0f} MB after the run ({grown * 1024 * 1024 / len(written) / 1024:.2f} KB/firing)")


if __name__ == "__main__":
    main()
