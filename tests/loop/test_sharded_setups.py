"""FSDP1 (flat parameters, and use_orig_params=True) and FSDP2 with activation checkpointing
on two gloo processes on the CPU, each at a width below hooktui's snapshot size and one
above it: `record`, `guard` and `debug` leave the model as found, their loss and `.grad`
equal a plain twin's step bit for bit, record's values equal plain hooks' and gradients;
and a NaN in one rank's shard of a weight stops every rank's guard with a NonFiniteError
saying the rank and whether that rank's shard holds it, twice in a loop that goes on
(sharded_worker.py does the work, every setup in one launch).

FSDP1 with use_orig_params=True once turned the guard's stop mid-forward into a
RuntimeError: the guard's next tracer tried to hook the non-leaf views FSDP puts in place
of the parameters while a forward runs."""

from __future__ import annotations

import pytest

from ranks import run_ranks

pytest.importorskip("torch.distributed.fsdp")

CHECKS = ("record_left_model", "guard_grads_equal_plain", "record_output_equal_hook", "record_grad_equal_plain",
          "debug_loss_equal_plain", "debug_grads_equal_plain", "params_equal_plain", "nan_left_model_as_plain",
          "guard_left_no_hook")


def test_fsdp1_both_layouts_and_fsdp2_with_checkpointing_record_guard_and_debug(tmp_path):
    results, errs = run_ranks("sharded_worker.py", tmp_path, timeout=240)
    for rank, (result, err) in enumerate(zip(results, errs)):
        # The user's error comes out of every guard, none replaced by hooktui's (FSDP1 with
        # use_orig_params=True once raised a RuntimeError here), and none of hooktui's failed.
        errors = {setup: result[setup]["guard_errors"] for setup in result if "/" in setup and not setup.endswith("grad_nan")}
        errors |= {setup: [result[setup]] for setup in result if setup.endswith("grad_nan")}
        assert all(e is not None and e.startswith("NonFiniteError: ") for two in errors.values() for e in two), (rank, errors)
        assert "hooktui: guard failed" not in err and "hooktui failed" not in err, err[-3000:]
        for setup in ("fsdp1", "fsdp1_orig", "fsdp2_ac"):
            for width in (8, 96):
                seen = result[f"{setup}/{width}"]
                where = (rank, setup, width)
                assert seen["record_error"] is None and seen["failures"] == [], (where, seen)
                for check in CHECKS:
                    assert seen[check] is True, (where, check)
                assert seen["record_grad_sampled"] is (width == 96), where
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
