"""FSDP2 (`fully_shard`) on two gloo processes on the CPU: `record`, `guard` and `debug` run
without a collective of hooktui's, leave the parameters DTensor shards, and their values
equal plain module hooks' and a plain twin's step, also when every summary of hooktui's
raises (fsdp2_worker.py does the work). On the same processes: FSDP1's flat gradient, split
back into the named parameters, is this rank's own before the reduce-scatter; its final_grad
firings, this rank's shard of the average."""

from __future__ import annotations

import re

import pytest

from ranks import run_ranks

pytest.importorskip("torch.distributed.fsdp")


def test_fsdp2_record_guard_and_debug_leave_the_shards_and_equal_a_plain_step(tmp_path):
    results, _ = run_ranks("fsdp2_worker.py", tmp_path)
    for result in results:
        assert result["record_error"] is None and result["failures"] == [], result
        for check in ("record_left_shards", "fc2_output_equal_hook", "param_grad_equal_plain_shard",
                      "guard_grads_equal_plain", "debug_loss_equal_plain", "debug_grads_equal_plain", "params_are_shards",
                      "failing_summaries_step_equal_plain"):
            assert result[check] is True, (result["rank"], check)
        assert result["dtensor_notes"] == 8  # one per parameter's param_grad
        assert result["fsdp2_grad_notes"] == 8  # each says which gradient it shows
        # FSDP1: the flat parameter's unsharded gradient (61 values), split into 0.weight ... 2.bias.
        assert result["fsdp1_split_equal_local"] is True and result["fsdp1_flat_shape"] == [61]
        assert result["fsdp1_note"].startswith("FSDP1 FlatParameter holding 0.weight [6, 8], 0.bias [6], 2.weight [1, 6], 2.bias [1]")
    fsdp1_final_grads_are_each_ranks_shard_of_the_average(results)
    # head's [1, 96] weight is sharded unevenly: rank 1 holds an empty part, said as such.
    assert "shape [1, 96], of a global [1, 96]; placements (Shard(0)) on mesh (2,) on cpu" in results[0]["a_dtensor_note"]
    assert "shape [0, 96] at offset (1, 0), of a global [1, 96]" in results[1]["a_dtensor_note"]


def fsdp1_final_grads_are_each_ranks_shard_of_the_average(results: list[dict]) -> None:
    """FSDP1 FULL_SHARD on two ranks: after the backward, one final_grad per named parameter
    showing the part of it in this rank's shard (whole, a run of its flattened elements, or
    none), equal to the average of the ranks' plain gradients; the ranks' parts cover each
    parameter exactly once."""
    average = results[0]["fsdp1_average"]
    assert results[1]["fsdp1_average"] == average
    covered = {name: [] for name in average}
    for result in results:
        finals = result["fsdp1_finals"]
        assert [f[2] for f in finals] == list(average)  # one firing per parameter, in the model's order
        for module, notes, target, shape, values, part, missing in finals:
            assert module == target.rpartition(".")[0]
            assert notes[0].startswith("the final .grad after the backward: this rank's shard of the gradient averaged "
                                       "over the 2 ranks (FSDP1, FULL_SHARD)")
            if missing is not None:
                assert shape is None and missing.startswith("no part of it is in this rank's shard")
                continue
            if part is None:
                first, last = 0, len(average[target]) - 1
            else:
                first, last = map(int, re.match(r"this rank's shard holds elements (\d+)\.\.(\d+) of its ", part).groups())
                assert shape == [last - first + 1]
            assert values == pytest.approx(average[target][first:last + 1], rel=1e-6, abs=1e-7)
            covered[target] += range(first, last + 1)
    assert {name: sorted(seen) for name, seen in covered.items()} == {name: list(range(len(v))) for name, v in average.items()}
    for result in results:  # under no_sync(): none
        assert result["fsdp1_no_sync_hooks"] == ["backward", "backward_pre", "forward", "forward_pre", "param_grad"]
