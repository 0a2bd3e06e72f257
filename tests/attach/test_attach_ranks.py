"""Under torchrun: `hooktui attach PID --rank R` opens rank R (found beside the pid of any
rank of the run), and every other armed rank records the same step to its own rank file, as
hooktui.debug's ranks do."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "loop"))

from hooktui.attach import wire  # noqa: E402
from hooktui.attach.client import Connection, find_rank  # noqa: E402
from hooktui.commands.attach import _record, beside_rank, open_step  # noqa: E402
from hooktui.engine.records.trace_file import read_trace  # noqa: E402
from ranks import run_ranks  # noqa: E402

TIMEOUT = 120.0


def test_rank_opens_and_the_other_rank_records_the_same_step(tmp_path):
    done: dict = {}
    ranks = threading.Thread(target=lambda: done.update(ran=run_ranks("../attach/rank_worker.py", tmp_path)), daemon=True)
    ranks.start()
    deadline = time.monotonic() + TIMEOUT
    while not all((tmp_path / f"pid{rank}").exists() for rank in (0, 1)):
        assert time.monotonic() < deadline and ranks.is_alive(), "the ranks never armed"
        time.sleep(0.05)
    pids = [int((tmp_path / f"pid{rank}").read_text()) for rank in (0, 1)]
    assert find_rank(pids[0], 1) == pids[1]  # found beside rank 0's pid
    connection = Connection(pids[1])
    step = beside_rank(connection, None)
    assert step == 2  # both at step 0, waiting: two steps ahead
    opened, first = open_step(connection, wire.Open(record=True, step=step), on_waiting=(tmp_path / "go").touch)
    assert _record(connection, opened, first, str(tmp_path / "opened.jsonl")) == 0
    ranks.join(TIMEOUT)
    assert "ran" in done
    (rank0,) = tmp_path.glob("hooktui-*-rank0.jsonl")
    info0, events0 = read_trace(rank0)
    info1, events1 = read_trace(tmp_path / "opened.jsonl")
    assert (info0.rank, info1.rank) == (0, 1)
    assert "step 2" in info0.model and "step 2" in info1.model
    assert [(e.hook, e.module) for e in events0] == [(e.hook, e.module) for e in events1]
