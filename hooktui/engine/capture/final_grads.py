"""`final_grad` firings: the `.grad` the optimizer will use, once the step's backward has
returned.

Under DDP (a forward of the step outside `no_sync`) and FSDP1 a `param_grad` firing shows this
rank's own gradient, before the wrapper's collective (grad_kinds.py): DDP writes the average
over the ranks into `.grad` in a callback queued for the end of the backward, FSDP1 leaves this
rank's shard of the averaged flat gradient there. So when `loss.backward()` has returned
(session.py), one firing per parameter shows its `.grad` as it is then, named as in the
user's model, filed under the module that holds the parameter (its last call), with a note
saying which gradient it is. A plain model, FSDP2 and tensor parallel get none: their
`param_grad` already is the final `.grad`.

Reading `.grad` here copies nothing into it and runs no collective; a failure is
hooktui's, noted on a firing (contain.py).
"""

from __future__ import annotations

from .grad_kinds import FinalGrad, GradKinds
from .host import FinalGradHost
from .source import definition_location


def fire_final_grads(tracer: FinalGradHost, kinds: GradKinds) -> None:
    for final in kinds.finals(tracer.walk.params):
        tracer.contain.call(f"its final .grad of {final.name}", _fire, tracer, final)


def _fire(tracer: FinalGradHost, final: FinalGrad) -> None:
    owner, _, short = final.name.rpartition(".")
    module = tracer.module_named(owner)
    name = f"{short}.grad"
    if final.grad is None:
        tensors = [tracer.missing(name, final.missing or "no .grad after the backward", target=final.name)]
    else:
        tensors = [tracer.describe(name, final.grad, target=final.name, note=final.part)]
    tracer.fire_event(
        hook="final_grad",
        module=module,
        call=max(tracer.call_count(owner) - 1, 0),
        tensors=tensors,
        live={name: final.grad},
        node=None,
        source=definition_location(type(module)),
        forward_index=tracer.last_forward_index(owner),
        notes=[final.note],
    )
