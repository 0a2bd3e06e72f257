"""What hooktui.guard says about this rank when it stops under torch.distributed.

Each rank runs its own guard and sees its own tensors: a bad value on one rank may be
fine on another, and a parameter that FSDP gathers for the forward is bad on every rank
while only one rank's shard holds the bad value. So the guard's error says which rank it
is (rank r of W), and what the bad tensor is of this rank's: a DTensor's local shard
(engine/summaries/sharded.py), the gradient before or after the wrapper's communication
(engine/capture/grad_kinds.py), the parameter of the user's inside an FSDP1 FlatParameter; and,
for a forward that made a bad value, whether this rank's shards of the module's
parameters hold it. Everything is read on this rank: no collective (one issued from here
would hang the ranks that did not stop).
"""

from __future__ import annotations

import torch

from ..engine.summaries import sharded
from ..engine.analysis.breakpoints import Breakpoint, nonfinite_words
from ..engine.capture.grad_kinds import user_fqn
from ..engine.records import notes as note_kinds
from ..engine.records.records import Event

# The start of the notes sharded.py and grad_kinds.py write (found by kind, records/notes.py):
# the rest of their text is said here.
_DTENSOR_NOTE = "DTensor: statistics and values are this rank's local part, "
_FLAT_NOTE = "FSDP1 FlatParameter holding "


def lines(event: Event, bp: Breakpoint, params: list[tuple[str, torch.Tensor]],
          flats: list[tuple[str, torch.Tensor]]) -> list[str]:
    """The guard's lines about this rank for a stop at `event`. `params`: the model's
    parameters as walked before the step (FSDP2's DTensor shards, FSDP1's orig params);
    `flats`: FSDP1's FlatParameters, with the user's name of the module holding each."""
    out = ["hooktui reads this rank's tensors only (no collective): the other ranks may be fine, or stop on their own."]
    bad = [(t, words) for t in event.tensors if (words := bp.tensor_reason(t, event.phase)) is not None]
    if not bad:
        return out
    tensor, _ = bad[0]
    if note_kinds.kind_of(tensor.note) == "dtensor_local":
        out.append(f"{tensor.name} is this rank's shard of a DTensor: local {tensor.note.removeprefix(_DTENSOR_NOTE)}.")
    if event.hook == "param_grad":
        out += [note + "." for note in note_kinds.of_kind(event.notes, "grad_kind")]
        flat = next(iter(note_kinds.of_kind(event.notes, "flat_param")), None)
        if flat is not None and not tensor.extra:
            out.append(_flat_grad(tensor.name, flat, bad))
    elif event.phase == "forward" and bp.kind == "nonfinite":
        out += _param_shards(event.module, params, flats, bp.inf)
    return out


def _flat_grad(name: str, note: str, bad: list) -> str:
    pieces = [(t, words) for t, words in bad if t.extra and t.target and note_kinds.kind_of(t.note) != "held_grad"]
    if pieces:
        where = "; ".join(f"{words} in {t.target}'s part ({t.name})" for t, words in pieces)
        return f"{name} is an FSDP1 FlatParameter's gradient (this rank's, unsharded, before FSDP's reduce-scatter): {where}."
    held = note.removeprefix(_FLAT_NOTE).partition(": ")[0]
    return (f"{name} is an FSDP1 FlatParameter's gradient (it holds {held}); hooktui could not place the bad values "
            "in one of those parameters (alignment padding, or a gradient that was not split).")


def _param_shards(module: str, params: list, flats: list, inf: bool) -> list[str]:
    """Which of `module`'s own parameters (not its children's: a child's bad output would
    have been named first) hold a bad value in this rank's part of them."""
    def inside(name: str) -> bool:
        return name.rpartition(".")[0] == module

    out, shards = [], 0
    in_flats: set[str] = set()  # the user's parameters a FlatParameter holds, said through it
    flat_ids = {id(flat) for _, flat in flats}  # mid-forward, a FlatParameter's data is the gathered whole
    for owner, flat in flats:
        infos = getattr(flat, "_shard_param_infos", None)
        shard = getattr(flat, "_local_shard", None)
        if infos is None or shard is None:
            continue
        for fqn, shape, info in zip(flat._fqns, flat._shapes, infos):
            name = user_fqn(owner, fqn)
            in_flats.add(name)
            if not inside(name) or not info.in_shard:
                continue
            shards += 1
            words = _words(shard[info.offset_in_shard:info.offset_in_shard + info.numel_in_shard], inf)
            if words:
                out.append(f"Its parameter {name} {list(shape)} holds {words} in this rank's shard of it (its elements "
                           f"{info.intra_param_start_idx}..{info.intra_param_end_idx}, in FSDP1's FlatParameter of "
                           f"{owner or '(root)'}).")
    for name, param in params:
        if name in in_flats or id(param) in flat_ids or not inside(name):
            continue
        if sharded.is_dtensor(param):
            shards += 1
            part = sharded.local(param)
            words = _words(part, inf)
            if words:
                where = sharded.describe_placement(param, part).removeprefix(_DTENSOR_NOTE)
                out.append(f"Its parameter {name} holds {words} in this rank's shard of it: local {where}.")
        elif (words := _words(param.detach(), inf)):
            out.append(f"Its parameter {name} holds {words}.")
    if not out and shards:
        out.append("This rank's shards of its parameters are finite: a bad value in one of them would be in another "
                   "rank's shard (FSDP gathers the shards for the forward).")
    return out


def _words(tensor: torch.Tensor, inf: bool) -> str:
    if tensor.numel() == 0 or not tensor.is_floating_point():
        return ""
    counts = (int(torch.isnan(tensor).sum()), int(torch.isposinf(tensor).sum()), int(torch.isneginf(tensor).sum()))
    return nonfinite_words(counts, inf)
