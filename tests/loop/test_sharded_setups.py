"""FSDP1 (flat parameters, and use_orig_params=True), FSDP2 with activation checkpointing,
DDP and tensor parallel on two gloo processes on the CPU, each at a width below hooktui's
snapshot size and one above it: `record`, `guard` and `debug` leave the model as found,
their loss and `.grad` equal a plain twin's step bit for bit, record's forward outputs and
backward grad_output / grad_input equal what PyTorch's own module hooks are handed in a
plain step (in the same order: under checkpoint_wrapper the checkpointed Linear's forward
fires again in the recompute), and its gradients equal plain ones. A NaN in one rank's
shard of a weight (the FSDP setups) stops every rank's guard with a NonFiniteError saying
the rank and whether that rank's shard holds it, twice in a loop that goes on. DDP with
no_sync() around the forward alone all-reduces nothing, around the backward alone it
does: the firings say which. sharded_worker.py does the work, every setup in one launch.

FSDP1 with use_orig_params=True once turned the guard's stop mid-forward into a
RuntimeError: the guard's next tracer tried to hook the non-leaf views FSDP puts in place
of the parameters while a forward runs."""

from __future__ import annotations

import pytest

from ranks import run_ranks

pytest.importorskip("torch.distributed.fsdp")

CHECKS = ("record_left_model", "guard_grads_equal_plain", "record_firings_equal_hooks", "record_grad_equal_plain",
          "debug_loss_equal_plain", "debug_grads_equal_plain", "params_equal_plain")
SHARDED = ("fsdp1", "fsdp1_orig", "fsdp2_ac")  # a NaN put in one rank's shard
NAN_CHECKS = ("nan_left_model_as_plain", "guard_left_no_hook")
LINEARS = [["forward", "0"], ["forward", "2.0"], ["forward", "3"], ["backward", "3"], ["backward", "2.0"], ["backward", "0"]]
# PyTorch's hooks under checkpoint_wrapper: the checkpointed 2.0 runs its forward again
# (hooks and all) in the recompute, just before its backward.
CHECKPOINTED = [*LINEARS[:4], ["forward", "2.0"], *LINEARS[4:]]


def test_sharded_ddp_and_tp_setups_record_guard_and_debug_like_plain_pytorch(tmp_path):
    results, errs = run_ranks("sharded_worker.py", tmp_path, timeout=240)
    for rank, (result, err) in enumerate(zip(results, errs)):
        # The user's error comes out of every guard, none replaced by hooktui's (FSDP1 with
        # use_orig_params=True once raised a RuntimeError here), and none of hooktui's failed.
        errors = {f"{setup}/{width}": result[f"{setup}/{width}"]["guard_errors"] for setup in SHARDED for width in (8, 96)}
        errors |= {f"{setup}/grad_nan": [result[f"{setup}/grad_nan"]] for setup in SHARDED}
        assert all(e is not None and e.startswith("NonFiniteError: ") for two in errors.values() for e in two), (rank, errors)
        assert "HooktuiWarning" not in err and "hooktui failed" not in err, err[-3000:]
        for setup in ("fsdp1", "fsdp1_orig", "fsdp2_ac", "ddp", "tp"):
            for width in (8, 96):
                seen = result[f"{setup}/{width}"]
                where = (rank, setup, width)
                assert seen["record_error"] is None and seen["failures"] == [], (where, seen)
                for check in CHECKS:
                    assert seen[check] is True, (where, check)
                assert seen["firings_compared"] == (CHECKPOINTED if setup == "fsdp2_ac" else LINEARS), where
                assert seen["record_grad_sampled"] is (width == 96), where
                if setup == "ddp":
                    assert seen["record_final_equal_plain"] is True, where
                    continue
                if setup == "tp":
                    continue  # no NaN put in: nothing gathers one rank's weight (sharded_worker.py)
                for check in NAN_CHECKS:
                    assert seen[check] is True, (where, check)
                first, second = seen["guard_errors"]
                for step, error in enumerate((first, second)):
                    assert f"hooktui.guard: rank {rank} of 2, step {step}, " in error and "(forward of 2.0 (" in error, (where, error)
                # The loop went on after the first: the next step says the same of this rank.
                assert first.split("\nOn rank ")[1].split("\nThe step's")[0] == second.split("\nOn rank ")[1].split("\nThe step's")[0]
                said = first.split(f"\nOn rank {rank} of 2:\n")[1]
                if rank == 0:
                    assert "Its parameter 2.0.weight " in said and "holds 1 NaN in this rank's shard of it" in said, (where, said)
                else:
                    assert said.splitlines()[1].startswith("  This rank's shards of its parameters are finite"), (where, said)

        # A NaN gradient of 2.0.weight on both ranks: the parameter inside FSDP1's FlatParameter
        # (64 values of its [8, 8] part), and FSDP2's shard of this rank, are named.
        for setup in ("fsdp1", "fsdp1_orig"):
            error = result[f"{setup}/grad_nan"]
            assert f"rank {rank} of 2, step 0, " in error and "(param_grad in backward of 2.0 (Linear) call 0)" in error, error
            assert ("_flat_param.grad is an FSDP1 FlatParameter's gradient (this rank's, unsharded, before FSDP's "
                    "reduce-scatter): 64 NaN in 2.0.weight's part (2.0.weight.grad).") in error, error
        error = result["fsdp2_ac/grad_nan"]
        offset = " at offset (4, 0)" if rank else ""
        assert f"rank {rank} of 2, step 0, " in error and "(param_grad in backward of 2.0 (Linear) call 0)" in error, error
        assert (f"weight.grad is this rank's shard of a DTensor: local shape [4, 8]{offset}, of a global [8, 8]; "
                f"placements (Shard(0)) on mesh (2,) on cpu, this rank at ({rank},).") in error, error
        assert "\n  FSDP2: this rank's shard of the gradient, after the reduce-scatter" in error, error

        # DDP decides in its forward whether its backward all-reduces. no_sync() around the
        # forward alone: the plain twin's .grad is this rank's own gradient, and hooktui says
        # so (no final_grad); around the backward alone: .grad is the plain all_reduce's
        # average, which the final_grad firing shows.
        skipped, reduced = result["ddp/no_sync_around_forward"], result["ddp/no_sync_around_backward"]
        for seen in (skipped, reduced):
            assert seen["error"] is None and seen["own_is_not_average"] and seen["param_grad_own"], seen
        assert skipped["twin_holds_own"] and not skipped["twin_holds_average"], skipped
        assert skipped["param_grad_note"].startswith("DDP under no_sync() in the forward"), skipped
        assert skipped["final_grads"] == 0, skipped
        assert reduced["twin_holds_average"] and not reduced["twin_holds_own"], reduced
        assert reduced["param_grad_note"].startswith("DDP: this rank's gradient, before DDP averages it over the 2 ranks"), reduced
        assert reduced["final_grads"] == 1 and reduced["final_equal_twin"], reduced
        assert reduced["final_note"].startswith("the final .grad after the backward: DDP's average over the 2 ranks"), reduced
