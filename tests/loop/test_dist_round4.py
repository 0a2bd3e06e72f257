"""Sharded and pipelined training, round 4 (issue 35, items 7-10), on two gloo ranks:

- `record` of one microbatch of FSDP2 (`set_requires_gradient_sync(False)`) or FSDP1
  (`no_sync()`) gradient accumulation leaves `.grad` and FSDP's own accumulated gradients
  as a twin that never ran it, bit for bit, and the loop's next syncing microbatch gives
  the same `.grad` (engine/run/sharded_grads.py). FSDP1 once raised "attempting to assign a
  gradient of size [37] to a tensor of size [19]" there.
- A pipeline schedule (ScheduleGPipe, 2 stages, 2 microbatches) given to `debug` and
  `record` in place of the model: the schedule's step runs its own backward, the loss is
  the mean of the last stage's `losses`, `.grad` equals a plain twin's, one `param_grad` a
  microbatch equals what PyTorch's own hooks see, and `final_grad` shows the `.grad` the
  schedule scaled (engine/run/pipeline.py, engine/capture/pipeline_grads.py).
round4_worker.py does the work of both in one launch.
"""

from __future__ import annotations

import pytest

from ranks import run_ranks

pytest.importorskip("torch.distributed.fsdp")
pytest.importorskip("torch.distributed.pipelining")

ACCUMULATION = (
    "fsdp2_record_nosync_left_state", "fsdp2_record_nosync_then_sync", "fsdp2_record_sync_left_state",
    "fsdp2_record_sync_then_sync", "fsdp1_record_sync_left_state", "fsdp1_record_sync_then_sync",
    "fsdp1_record_nosync_left_state", "fsdp1_record_nosync_then_sync", "fsdp1_saved_shard_held",
    "fsdp1_record_saved_shard_left_state", "fsdp1_record_saved_shard_then_sync",
)
PIPELINE = ("pipe_debug_loss_is_mean", "pipe_losses_equal_twin", "pipe_debug_grads_equal_twin", "pipe_record_left_grads",
            "pipe_param_grads_equal_hooks", "pipe_final_grads_equal_twin", "pipe_last_is_twice_final")


def test_record_under_fsdp_accumulation_and_pipeline_schedules_leave_the_run_as_plain(tmp_path):
    results, errs = run_ranks("round4_worker.py", tmp_path, timeout=240)
    for rank, (result, err) in enumerate(zip(results, errs)):
        assert "HooktuiWarning" not in err and "hooktui failed" not in err, err[-3000:]
        assert result["fsdp1_record_error"] is None, result["fsdp1_record_error"]
        for check in ACCUMULATION + PIPELINE:
            assert result[check] is True, (rank, check)
        assert result["pipe_record_error"] is None, result["pipe_record_error"]
        # Each microbatch's backward is a backward (not "inside the forward"), its param_grad
        # says which microbatch and what the schedule does after the last; final_grad, what it did.
        assert ("param_grad", "backward") in [tuple(p) for p in result["pipe_phases"]]
        assert ("forward", "forward") in [tuple(p) for p in result["pipe_phases"]]
        params = [note for hook, _, note in result["pipe_notes"] if hook == "param_grad"]
        finals = [note for hook, _, note in result["pipe_notes"] if hook == "final_grad"]
        assert len(params) == 4 and len(finals) == 2, result["pipe_notes"]
        for backward, note in zip((1, 1, 2, 2), params):
            assert note.startswith(f"pipeline schedule ScheduleGPipe: microbatch backward {backward} of 2; .grad holds the "
                                   "sum of the microbatches' gradients so far; after the last the schedule divides .grad "
                                   "by 2"), note
        assert all(n.startswith("the final .grad after the step: pipeline schedule ScheduleGPipe divided the sum of its "
                                "2 microbatches' gradients by 2") for n in finals), finals
        assert result["pipe_loss_text"].startswith("the mean of the microbatch losses"), result["pipe_loss_text"]


def test_guard_and_debug_leave_a_compiled_ddp_model_bitwise_as_plain(tmp_path):
    """torch.compile (inductor) inside DDP, one gloo rank (compile_worker.py): the guard's and
    debug's step give `.grad` bit for bit as a plain twin's: hooktui's NaN hunt stays out of
    the compiled graph (engine/run/lifecycle.py)."""
    pytest.importorskip("torch._inductor")
    (result,), _ = run_ranks("compile_worker.py", tmp_path, world=1, timeout=300)
    for check in ("guard_grads_equal_plain", "debug_loss_equal_plain", "debug_grads_equal_plain"):
        assert result[check] is True, (check, result)


def test_a_step_that_runs_its_own_backward_returns_none_and_steps_as_plain(monkeypatch, tmp_path):
    """On one process: a step that calls backward itself (as a pipeline schedule's does) and
    returns None gets no second backward from hooktui; `.grad` is a plain step's, its
    firings are backward's. One that returns a non-scalar after its own backward is told
    what to do."""
    import torch
    from torch import nn

    import hooktui
    import hooktui.loop.where

    monkeypatch.setattr(hooktui.loop.where, "terminal_attached", lambda: False)

    def build():
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))

    model, twin = build(), build()
    x = torch.randn(5, 3, generator=torch.Generator().manual_seed(0))
    for half in (x[:2], x[2:]):  # two microbatches, as a schedule runs them
        twin(half).pow(2).mean().backward()

    def own_backward():
        for half in (x[:2], x[2:]):
            model(half).pow(2).mean().backward()

    assert hooktui.debug(model, own_backward) is None
    assert all(torch.equal(p.grad, q.grad) for p, q in zip(model.parameters(), twin.parameters()))
    trace = hooktui.record(model, None, step=own_backward)
    assert trace.error is None and trace.loss is None and trace.info.loss.startswith("none: the step ran its own backward")
    assert all(torch.equal(p.grad, q.grad) for p, q in zip(model.parameters(), twin.parameters()))  # record put them back
    phases = {(e.hook, e.phase) for e in trace.events}
    assert ("param_grad", "backward") in phases and ("backward", "backward") in phases and ("forward", "forward") in phases
    assert sum(e.hook == "param_grad" for e in trace.events) == 8  # 4 parameters, 2 microbatches

    def outputs_after_backward():
        out = model(x)
        out.pow(2).mean().backward()
        return out

    with pytest.raises(ValueError, match=r"shape \(5, 1\) \(the step ran a backward itself, as a pipeline schedule's step does"):
        hooktui.debug(model, outputs_after_backward)
