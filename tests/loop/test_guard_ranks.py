"""What hooktui.guard says about this rank (loop/guard_ranks.py), on firings built by hand:
which user's parameter inside an FSDP1 FlatParameter holds the bad gradient, that a
DTensor's record is this rank's shard, and whether a module's own parameters hold the bad
value. The two-process runs are test_sharded_setups.py's."""

from __future__ import annotations

import torch
from torch import nn

from hooktui.engine.analysis.breakpoints import Breakpoint
from hooktui.engine.records.notes import Note
from hooktui.engine.records.records import Event, TensorRecord, TensorStats
from hooktui.loop import guard_ranks
from hooktui.loop.guard import _message

NONFINITE = Breakpoint.nonfinite()
# The notes grad_kinds.py and sharded.py make: the guard finds them by kind.
FLAT_NOTE = Note("flat_param", "FSDP1 FlatParameter holding 2.0.weight [8, 8], 2.0.bias [8]: this rank's unsharded gradient, before "
             "FSDP's reduce-scatter (...); split back into those parameters")


def record(name: str, shape: list[int], nan: int = 0, **kw) -> TensorRecord:
    count = torch.Size(shape).numel()
    return TensorRecord(name, shape, stats=TensorStats(count=count, nan=nan, nonfinite=nan), **kw)


def param_grad(tensors: list[TensorRecord], notes: list[str]) -> Event:
    return Event(0, "backward", "param_grad", "2.0", "Linear", 0, tensors=tensors, notes=notes)


def test_a_flat_gradient_names_the_parameter_whose_part_holds_the_nan():
    event = param_grad([record("_flat_param.grad", [72], nan=2, target="2.0._flat_param"),
                        record("2.0.weight.grad", [8, 8], nan=2, target="2.0.weight", extra=True),
                        record("2.0.bias.grad", [8], target="2.0.bias", extra=True)], [FLAT_NOTE])
    (*_, flat) = guard_ranks.lines(event, NONFINITE, [], [])
    assert flat == ("_flat_param.grad is an FSDP1 FlatParameter's gradient (this rank's, unsharded, before FSDP's "
                    "reduce-scatter): 2 NaN in 2.0.weight's part (2.0.weight.grad).")


def test_a_flat_gradient_bad_outside_every_part_is_said_as_such():
    event = param_grad([record("_flat_param.grad", [72], nan=1, target="2.0._flat_param"),
                        record("2.0.weight.grad", [8, 8], target="2.0.weight", extra=True)], [FLAT_NOTE])
    (*_, flat) = guard_ranks.lines(event, NONFINITE, [], [])
    assert flat.startswith("_flat_param.grad is an FSDP1 FlatParameter's gradient (it holds 2.0.weight [8, 8], 2.0.bias [8]); "
                           "hooktui could not place the bad values")


def test_a_dtensor_gradient_is_said_to_be_this_ranks_shard():
    note = Note("dtensor_local", "DTensor: statistics and values are this rank's local part, shape [48, 96] at offset (48, 0), of a global "
            "[96, 96]; placements (Shard(0)) on mesh (2,) on cpu, this rank at (1,)")
    kind = Note("grad_kind", "FSDP2: this rank's shard of the gradient, after the reduce-scatter (averaged over the ranks, FSDP2's default): "
            "as .grad holds it")
    event = param_grad([record("weight.grad", [48, 96], nan=1, target="2.0.weight", note=note)], [kind])
    lines = guard_ranks.lines(event, NONFINITE, [], [])
    assert lines[1] == ("weight.grad is this rank's shard of a DTensor: local shape [48, 96] at offset (48, 0), of a global "
                        "[96, 96]; placements (Shard(0)) on mesh (2,) on cpu, this rank at (1,).")
    assert lines[2] == kind + "."


def test_a_forward_names_its_own_bad_parameter_and_the_message_its_rank():
    layer = nn.Linear(2, 2)
    with torch.no_grad():
        layer.weight[0, 1] = float("nan")
    event = Event(3, "forward", "forward", "0", "Linear", 0, tensors=[record("output", [1, 2], nan=2)])
    params = [("0.weight", layer.weight), ("0.bias", layer.bias), ("1.weight", nn.Linear(1, 1).weight)]
    lines = guard_ranks.lines(event, NONFINITE, params, [])
    assert lines[1:] == ["Its parameter 0.weight holds 1 NaN."]
    message = _message(2, event, NONFINITE, "2 NaN in output", None, (1, 2), lines)
    assert message.startswith("hooktui.guard: rank 1 of 2, step 2, firing #3 (forward of 0 (Linear) call 0): 2 NaN in output\n"
                              "On rank 1 of 2:\n  hooktui reads this rank's tensors only")
