"""The run keeps Python's garbage collector out of the way of hooktui's own long-lived
objects (engine/capture/collector.py), and leaves the collector as it found it."""

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import torch
from torch import nn

from hooktui.engine.capture import tracer
from hooktui.engine.run.session import record


def _deep_model(n: int) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(*[nn.Sequential(nn.Linear(4, 4), nn.Tanh()) for _ in range(n)])


def test_no_full_collection_while_a_backwards_watches_are_placed():
    """Placing the watches makes objects for every node of the graph; with the collector
    running, its full passes over them grow with the model (a run-through that is not
    linear in the number of modules). Thresholds this low force collections everywhere else.

    In a fresh interpreter: Python 3.11 runs a full collection only once the objects
    promoted since the last one exceed a quarter of those it left, so one full collection
    of a large heap earlier in the test process (a run's collect_before_next_run, any
    gc.collect()) could keep the whole run from any (seen in CI)."""
    script = "import json, test_collector as t; print(json.dumps(t.placing_collections()))"
    done = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).parent, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 0, done.stderr[-3000:]
    counts = json.loads(done.stdout.strip().splitlines()[-1])
    assert counts["ran"]
    assert counts["full_during_run"] > 0  # the thresholds did force full collections during the run
    assert counts["full_while_placing"] == 0
    # Frozen before the collector runs again: the next collection does not find what
    # placing made waiting in the youngest generation (thousands of objects here).
    assert counts["young_after"] is not None and counts["young_after"] < 100  # about the threshold (20); ~50,000 if left young


def placing_collections() -> dict:
    """A 300-block model recorded with collection thresholds (20, 1, 1): the full collections
    during the run and while its backward's watches are placed, and the objects waiting in
    the youngest generation at the first collection after placing."""
    placing = []
    full_while_placing = []
    placed = []
    young_after = []

    real = tracer.Tracer._place_watches

    def place(self, *args, **kwargs):
        placing.append(True)
        try:
            return real(self, *args, **kwargs)
        finally:
            placing.pop()
            placed.append(True)

    def on_gc(phase, info):
        if phase == "start" and info["generation"] == 2 and placing:
            full_while_placing.append(info)
        if phase == "start" and placed and not young_after:
            young_after.append(gc.get_count()[0])

    tracer.Tracer._place_watches = place
    thresholds = gc.get_threshold()
    gc.set_threshold(20, 1, 1)
    gc.callbacks.append(on_gc)
    try:
        full_before = gc.get_stats()[2]["collections"]
        trace = record(_deep_model(300), torch.randn(2, 4))
        full_during_run = gc.get_stats()[2]["collections"] - full_before
    finally:
        gc.callbacks.remove(on_gc)
        gc.set_threshold(*thresholds)
        tracer.Tracer._place_watches = real
    return {
        "ran": not trace.failed and any(e.phase == "backward" for e in trace.events),
        "full_during_run": full_during_run,
        "full_while_placing": len(full_while_placing),
        "young_after": young_after[0] if young_after else None,
    }


def _frozen_by_the_process() -> int:
    """Objects in the permanent generation, once a collection has put there what the
    interpreter keeps frozen itself (Python 3.12's immortal objects; none on 3.11, 3.13)."""
    gc.collect()
    return gc.get_freeze_count()


def test_a_run_freezes_whatever_the_interpreter_keeps_frozen_itself():
    """A fresh Python 3.12.1 has 375 immortal objects in the permanent generation: not a
    freeze of the process's own, so the run freezes what is alive as it starts."""
    before = _frozen_by_the_process()
    during = []

    class Probe(nn.Module):
        def forward(self, x):
            during.append(gc.get_freeze_count())
            return x * 2

    trace = record(nn.Sequential(nn.Linear(4, 4), Probe()), torch.randn(2, 4))
    assert not trace.failed and during
    assert during[0] > before + 1000  # everything alive as the run started (torch's modules among it)
    assert _frozen_by_the_process() == before


def test_the_collector_is_left_as_it_was_found():
    before = _frozen_by_the_process()
    assert gc.isenabled()
    trace = record(_deep_model(5), torch.randn(2, 4))
    assert not trace.failed
    assert gc.isenabled()
    assert _frozen_by_the_process() == before  # what the run froze is back in the collector's reach


def test_the_collector_is_left_as_it_was_found_when_the_model_fails():
    class Fails(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = nn.Linear(4, 4)

        def forward(self, x):
            y = self.inner(x)
            y.register_hook(lambda g: 1 / 0)  # raises in the backward, after the watches are placed
            return y

    before = _frozen_by_the_process()
    trace = record(Fails(), torch.randn(2, 4))
    assert trace.failed and "ZeroDivisionError" in trace.error.type
    assert gc.isenabled() and _frozen_by_the_process() == before


def test_objects_the_process_froze_itself_stay_frozen():
    """A process that froze its own objects (before forking data-loader workers) keeps
    them frozen: hooktui then freezes nothing, since unfreezing is all or nothing."""
    mine = [object()]  # a container the collector tracks
    gc.freeze()
    try:
        assert not any(o is mine for o in gc.get_objects())  # frozen: in no generation
        trace = record(_deep_model(5), torch.randn(2, 4))
        assert not trace.failed
        assert not any(o is mine for o in gc.get_objects())  # still frozen
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    assert any(o is mine for o in gc.get_objects())  # the check above can see it


def test_garbage_asked_for_is_collected_before_the_next_run_freezes():
    """An app closed at `R` (or a finished `hooktui.debug` step's) is garbage with cycles: a
    run starting next collects it first when asked, instead of freezing it for the run."""
    import weakref

    from hooktui.engine.capture import collector

    class Closed:
        pass

    def a_cycle() -> weakref.ref:
        closed = Closed()
        closed.itself = closed
        return weakref.ref(closed)

    gc.collect()
    left = a_cycle()
    collector.collect_before_next_run()
    collector.run_started()
    try:
        alive_in_the_run = left() is not None
    finally:
        collector.run_ended()
    assert not alive_in_the_run
