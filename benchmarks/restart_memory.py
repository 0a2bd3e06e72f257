"""What the app holds when `R` runs the model again (issue 33, memory): headless, in-process.

`hooktui MODEL.py` on benchmarks/memory.py's MLP (one bare step before the pause, as
app_memory.py's model file): `c` to the run's end, `R`, then `c` again in the app `R` made.
At the second run's backward start (its peak: the forward's activations and the first
.grad it makes) and at its end it prints the process's RSS and the tensor storage alive:
the parameters, the second run's .grad and snapshots, and whatever the first run left that
is still alive. The first app is closed at `R`; what it kept for its console (each
parameter's final .grad) and its history are garbage from then on, but the next run
freezes the collector as it starts (engine/capture/collector.py): garbage with cycles
lives through the run unless it was let go before.

Run with `.venv/bin/python benchmarks/restart_memory.py --firings 12000` (Linux).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import tempfile
import time
import weakref
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app_memory import MODEL  # noqa: E402  (benchmarks/app_memory.py)
from app_memory_parts import rss_mb, storage_mb  # noqa: E402

from hooktui.commands.common import load  # noqa: E402
from hooktui.commands.open import restartable_app  # noqa: E402
from hooktui.commands.options import ModelOptions  # noqa: E402


def storage_alive_mb() -> float:
    """storage_mb, frozen objects included (gc.get_objects leaves out what a run froze):
    unfrozen to be listed and frozen again, with no collection in between."""
    enabled = gc.isenabled()
    gc.disable()
    frozen = gc.get_freeze_count()
    try:
        gc.unfreeze()
        return storage_mb()
    finally:
        if frozen:
            gc.freeze()
        if enabled:
            gc.enable()


async def run_to_end(app, then: str) -> float:
    async with app.run_test(size=(120, 40), notifications=False) as pilot:
        while not (app.state == "paused" and app.history.cursor == 0):
            await pilot.pause(0.05)
        started = time.monotonic()
        await pilot.press("c")
        while app.state != "finished":
            await pilot.pause(0.1)
        ran = time.monotonic() - started
        await pilot.pause(0.5)
        await pilot.press(then)
        while app.is_running:
            await pilot.pause(0.05)
    return ran


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--firings", type=int, default=12_000)
    args = parser.parse_args()
    torch.set_num_threads(1)
    blocks = max(1, round(args.firings / 644 * 64))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "mlp.py"
        path.write_text(MODEL.format(blocks=blocks, warm=True))
        loaded = load(ModelOptions(str(path)))
        params = sum(p.untyped_storage().nbytes() for p in loaded.model.parameters()) / 2**20
        app = restartable_app(loaded, [], legacy=False)
        first = asyncio.run(run_to_end(app, "R"))
        grads = sum(g.untyped_storage().nbytes() for g in app.source.session.final_grads.values()) / 2**20
        firings = len(app.history)
        print(f"{blocks} x (Linear(64,64)+GELU), {firings} firings a run; parameters {params:.0f} MB, "
              f"the first run's final .grad {grads:.0f} MB (c to its end {first:.0f} s)")
        assert app.restart_requested and app.source.join(60)
        first_app = weakref.ref(app)
        app = app.restart(app)  # as hooktui/ui/process.py does: the first app is let go here
        seen = {}
        session = app.source.session
        started = session._backward_started

        def noted(depth: int) -> None:
            if depth == 0 and not seen:
                seen["rss"], seen["storage"] = rss_mb(), storage_alive_mb()
                seen["first app"] = "alive" if first_app() is not None else "collected"
            started(depth)

        session._backward_started = noted
        second = asyncio.run(run_to_end(app, "q"))
        print(f"  second run's backward starts: RSS {seen['rss']:.0f} MB, tensor storage alive {seen['storage']:.0f} MB; the first app {seen['first app']}")
        print(f"  second run's end (c {second:.0f} s): RSS {rss_mb():.0f} MB, tensor storage alive {storage_alive_mb():.0f} MB")


if __name__ == "__main__":
    main()
