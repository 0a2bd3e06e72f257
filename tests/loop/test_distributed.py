"""Two processes with torch.distributed (gloo, world size 2, CPU), as torchrun starts them:
each records its step to its own trace file (the name carries the rank), only the rank
named by HOOKTUI_RANK opens the app, and DDP's gradients are those of a plain step."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from hooktui.engine.trace_file import read_trace_file

HERE = Path(__file__).resolve().parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_ranks_each_record_and_only_hooktui_rank_opens_the_app(tmp_path):
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update({"WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "HOOKTUI_RANK": "1",
                "HOOKTUI_DIR": str(tmp_path), "PYTHONPATH": str(HERE.parents[1])})
    processes = [
        subprocess.Popen(
            [sys.executable, str(HERE / "dist_worker.py"), str(tmp_path / f"result{rank}.json")],
            env={**env, "RANK": str(rank), "LOCAL_RANK": str(rank)},
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for rank in (0, 1)
    ]
    outputs = []
    try:
        for process in processes:
            outputs.append(process.communicate(timeout=120))
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
    for process, (out, err) in zip(processes, outputs):
        assert process.returncode == 0, err[-2000:]
    results = [json.loads((tmp_path / f"result{rank}.json").read_text()) for rank in (0, 1)]
    assert [r["rank"] for r in results] == [0, 1]
    assert [r["opened"] for r in results] == [False, True]  # HOOKTUI_RANK=1
    assert all(r["grads_equal_plain"] and r["grads_equal_across_ranks"] for r in results)
    for result, (_, err) in zip(results, outputs):
        name = f"hooktui-{result['pid']}-1-rank{result['rank']}.jsonl"
        assert f"rank {result['rank']}: recorded the step" in err and name in err
        events = read_trace_file(tmp_path / name).events
        assert {e.hook for e in events} >= {"forward", "backward", "param_grad"}
        # Each param_grad shows this rank's gradient before DDP's all-reduce, and says so.
        grads = [e for e in events if e.hook == "param_grad"]
        assert len(grads) == 4
        for event in grads:
            (shown,) = event.tensors
            assert shown.values == result["local_grads"][shown.target] != result["final_grads"][shown.target]
            assert "DDP: this rank's gradient, before DDP averages it over the 2 ranks" in event.notes[0]
    assert sorted(p.name for p in tmp_path.glob("*.jsonl")) == sorted(
        f"hooktui-{r['pid']}-1-rank{r['rank']}.jsonl" for r in results
    )
