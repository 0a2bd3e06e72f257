"""Tensor parallel (ColwiseParallel, RowwiseParallel) on two gloo processes on the CPU:
`record`, `guard` and `debug` run, leave the model as found, and the loss and the .grad
shards equal a plain twin's step (tp_worker.py does the work)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from test_distributed import _free_port

pytest.importorskip("torch.distributed.tensor.parallel")
HERE = Path(__file__).resolve().parent


def test_tp_record_guard_and_debug_equal_a_plain_step(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update({"WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port()),
                "HOOKTUI_DIR": str(tmp_path), "PYTHONPATH": str(HERE.parents[1])})
    processes = [
        subprocess.Popen(
            [sys.executable, str(HERE / "tp_worker.py"), str(tmp_path / f"result{rank}.json")],
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
                process.wait()
    for process, (_, err) in zip(processes, outputs):
        assert process.returncode == 0, err[-3000:]
    for rank in (0, 1):
        result = json.loads((tmp_path / f"result{rank}.json").read_text())
        assert result["record_error"] is None and result["failures"] == [], result
        for check in ("record_left_model", "guard_grads_equal_plain", "debug_loss_equal_plain",
                      "debug_grads_equal_plain", "params_equal_plain"):
            assert result[check] is True, (rank, check)
