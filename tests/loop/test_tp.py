"""Tensor parallel (ColwiseParallel, RowwiseParallel) on two gloo processes on the CPU:
`record`, `guard` and `debug` run, leave the model as found, and the loss and the .grad
shards equal a plain twin's step (tp_worker.py does the work)."""

from __future__ import annotations

import pytest

from ranks import run_ranks

pytest.importorskip("torch.distributed.tensor.parallel")


def test_tp_record_guard_and_debug_equal_a_plain_step(tmp_path):
    results, _ = run_ranks("tp_worker.py", tmp_path)
    for rank, result in enumerate(results):
        assert result["record_error"] is None and result["failures"] == [], result
        for check in ("record_left_model", "guard_grads_equal_plain", "debug_loss_equal_plain",
                      "debug_grads_equal_plain", "params_equal_plain"):
            assert result[check] is True, (rank, check)
