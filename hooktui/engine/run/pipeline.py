"""A pipeline schedule (`torch.distributed.pipelining`) given in place of the model: what
hooktui traces is this rank's stage module, and the schedule says what its step does to
`.grad` (engine/capture/pipeline_grads.py).

A schedule's `step()` runs the forward and backward of every microbatch itself and returns
no loss (None on a stage before the last, the merged outputs on the last), so a run on a
schedule never calls backward: the loss is the mean of the microbatch losses the schedule
put in the `losses` list the step was given (the gradients are those of that mean with
`scale_grads=True`, the schedule's default). Schedules with one stage on each rank
(ScheduleGPipe, Schedule1F1B); a rank holding several stages is refused.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ..capture.pipeline_grads import Pipeline


def is_schedule(obj: Any) -> bool:
    """A schedule of torch.distributed.pipelining (read by its class, never imported here)."""
    return any(cls.__module__.startswith("torch.distributed.pipelining") and cls.__name__ == "_PipelineSchedule"
               for cls in type(obj).__mro__)


def stage_of(schedule: Any) -> tuple[nn.Module, Pipeline, str]:
    """This rank's stage module, what the schedule does to its `.grad`, and the stage in words
    ("stage 1 of 2"). TypeError where this rank holds several stages."""
    stages = getattr(schedule, "_stages", None)
    stage = getattr(schedule, "_stage", None)
    if stage is None and stages is not None:
        if len(stages) != 1:
            raise TypeError(f"hooktui traces one pipeline stage a run: this rank holds {len(stages)} stages of "
                            f"{type(schedule).__name__}; give one stage's module as the model")
        stage = stages[0]
    module = getattr(stage, "submod", None)
    if not isinstance(module, nn.Module):
        raise TypeError(f"hooktui cannot find this rank's stage module in {type(schedule).__name__}")
    microbatches = int(schedule._n_microbatches)
    scale = microbatches if getattr(schedule, "scale_grads", True) else 1
    where = f"stage {stage.stage_index} of {stage.num_stages}"
    return module, Pipeline(type(schedule).__name__, microbatches, scale), where


def mean_loss(losses: list | None) -> Any:
    """The step's loss: the mean of the microbatch losses (detached); None where there are
    none (a stage before the last)."""
    tensors = [loss.detach() for loss in losses or () if isinstance(loss, torch.Tensor)]
    if not tensors:
        return None
    return torch.stack([t.reshape(()) for t in tensors]).mean()
