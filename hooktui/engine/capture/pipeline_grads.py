"""What a pipeline schedule (`torch.distributed.pipelining`) does to `.grad`, said on the
`param_grad` and `final_grad` firings of a step that runs one (engine/run/pipeline.py).

A schedule's `step()` runs every microbatch's forward and backward itself: each microbatch's
backward adds its gradient to `.grad` (one `param_grad` firing per parameter per microbatch,
showing the sum so far). After the last one, with `scale_grads=True` (its default) the stage
divides `.grad` in place by the number of microbatches (`PipelineStage.perform_reduce_grad`),
so the last `param_grad` firing shows n_microbatches times the `.grad` the optimizer uses:
the step's end fires one `final_grad` per parameter with that `.grad`. With
`scale_grads=False` the last `param_grad` already is the final `.grad`: no `final_grad`.
Checked on torch 2.13 with ScheduleGPipe, two gloo ranks (tests/loop/test_dist_round4.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..records.notes import Note


@dataclass(frozen=True)
class Pipeline:
    """This rank's stage of a schedule: what the step does to `.grad`."""

    schedule: str  # the schedule's class name
    microbatches: int
    scale: int  # what `.grad` is divided by after the last microbatch's backward (1: nothing)

    def param_grad_note(self, backward: int) -> Note:
        """On the firing of the `backward`-th microbatch backward (1-based) of this parameter."""
        said = (f"pipeline schedule {self.schedule}: microbatch backward {backward} of {self.microbatches}; .grad holds the sum of the "
                f"microbatches' gradients so far")
        if self.scale == 1:
            return Note("grad_kind", f"{said} (scale_grads=False: no scaling after the last, this is the final .grad)")
        return Note("grad_kind", f"{said}; after the last the schedule divides .grad by {self.scale} (n_microbatches, "
                    "scale_grads=True): the final_grad firing shows it")

    def final_note(self) -> str:
        return (f"the final .grad after the step: pipeline schedule {self.schedule} divided the sum of its "
                f"{self.microbatches} microbatches' gradients by {self.scale} (scale_grads=True), what the optimizer "
                "uses (the last param_grad firing showed the sum)")
