"""Which gradient a `param_grad` firing shows, under data-parallel wrappers.

The firing comes from the parameter's post-accumulate-grad hook, which runs as autograd
writes `.grad`, before the wrapper's own communication:
- DDP: this rank's gradient, before the all-reduce (DDP writes the average over the ranks
  into `.grad` when the backward ends; not when the step's forwards all ran under `no_sync`
  or `no_grad`: DDP decides in its forwards, `GradKinds._all_reduces` below).
- FSDP2 (`fully_shard`): the parameter is a DTensor shard, and the hook runs once the
  reduce-scatter has written this rank's shard of the (averaged) gradient.
- FSDP1 with flat parameters: one FlatParameter holds several of the user's parameters;
  the hook sees the unsharded flat gradient of this rank before the reduce-scatter, which
  is split back into the named parameters (`_fqns`, `_shapes`, `_numels_with_padding`).
Checked on torch 2.13, gloo (tests/loop/test_distributed.py, test_fsdp2.py,
test_wrapper_names.py).

Where that is not the gradient the optimizer uses (DDP, a forward of the step outside `no_sync`; FSDP1), the
step's end shows it: `finals()` lists each parameter's `.grad` once the backward has
returned, when the wrappers' callbacks queued for its end have run (final_grads.py).
FSDP2's and tensor parallel's `param_grad` already is that `.grad` (a DTensor shard).
"""

from __future__ import annotations


from dataclasses import dataclass

import torch
from torch import nn

from ..records.notes import Note
from ..summaries import sharded
from .pipeline_grads import Pipeline
from .wrappers import WRAPPED_BY, class_names


@dataclass(frozen=True)
class Piece:
    """One named parameter's part of a FlatParameter's gradient."""

    name: str  # the user's name of the parameter
    tensor: torch.Tensor


@dataclass(frozen=True)
class FinalGrad:
    """One parameter's `.grad` after the backward, as this rank holds it."""

    name: str  # the user's name of the parameter
    grad: torch.Tensor | None  # the gradient, or this rank's part of it; None: none here
    note: str  # which gradient this is (the firing's note)
    part: str | None = None  # which part of the parameter `grad` is, when not all of it
    missing: str | None = None  # why there is none (`grad` None)


class GradKinds:
    def __init__(self, modules: list[tuple[str, nn.Module]], pipeline: Pipeline | None = None) -> None:
        # A pipeline schedule's stage (pipeline_grads.py), and id(param) -> its backwards so far.
        self.pipeline = pipeline
        self._backwards: dict[int, int] = {}
        # id(param) -> the DDP wrapper that all-reduces its gradient.
        self._ddp: dict[int, nn.Module] = {}
        self._fsdp2 = False
        # FSDP1's flat parameters, with the name of the module they are split over: with
        # use_orig_params=True they are no registered parameter (the model's parameters get
        # their .grad from FSDP, not from autograd), so param_grads.py hooks them here.
        self.flat: list[tuple[str, torch.Tensor]] = []
        self._flat_wrapper: dict[int, nn.Module] = {}  # id(flat parameter) -> its FSDP1 module
        # id(DDP wrapper) -> whether one of its forwards seen in this step prepared its reducer
        # for the backward (`ddp_forward`); absent: none seen.
        self._prepared: dict[int, bool] = {}
        # id(param) -> param, for the parameters with nothing to say (`notes`), decided once.
        self._plain: dict[int, torch.Tensor] = {}
        for name, module in modules:
            names = class_names(type(module))
            if "DistributedDataParallel" in names:
                for param in module.parameters():
                    self._ddp[id(param)] = module
            self._fsdp2 = self._fsdp2 or "FSDPModule" in names
            if "FullyShardedDataParallel" in names:
                flat = getattr(module, "_flat_param", None)
                if flat is not None and _is_flat(flat):
                    self.flat.append((name.removesuffix(f"[{type(module).__name__}]"), flat))
                    self._flat_wrapper[id(flat)] = module

    @property
    def ddp_wrappers(self) -> list[nn.Module]:
        """The DDP modules of the model, each once: their forwards decide (`ddp_forward`)."""
        return list({id(ddp): ddp for ddp in self._ddp.values()}.values())

    def ddp_forward(self, ddp: nn.Module) -> None:
        """Right after a forward of `ddp` returned (hooktui's forward hook on it: DDP's
        `_post_forward` has run, and set `require_forward_param_sync` True iff it prepared
        its reducer for backward). Reads that flag, writes nothing into DDP."""
        done = getattr(ddp, "require_forward_param_sync", None)
        if done is not None:
            self._prepared[id(ddp)] = self._prepared.get(id(ddp), False) or bool(done)

    def notes(self, param: torch.Tensor, owner: str) -> tuple[list[str], list[Piece]]:
        """What to say on the firing of `param` (held by the module shown as `owner`), and
        the named parts of a FlatParameter's gradient."""
        if self.pipeline is None and self._plain.get(id(param)) is param:
            return (), ()
        said, pieces = self._wrapper_notes(param, owner)
        if self.pipeline is None:
            if not said and not pieces:
                # Nothing to say now means nothing ever for this parameter: its wrapper, if any,
                # was found when the run started, and whether it is flat or a DTensor holds.
                self._plain[id(param)] = param
            return said, pieces
        backward = self._backwards[id(param)] = self._backwards.get(id(param), 0) + 1
        return [self.pipeline.param_grad_note(backward), *said], pieces

    def _wrapper_notes(self, param: torch.Tensor, owner: str) -> tuple[list[str], list[Piece]]:
        ddp = self._ddp.get(id(param))
        if ddp is not None:
            if not self._all_reduces(ddp):
                return [Note("grad_kind", "DDP under no_sync() in the forward (where DDP decides): this rank's gradient, accumulated "
                         "locally; no all-reduce in this backward")], []
            return [Note("grad_kind", f"DDP: this rank's gradient, before DDP averages it over the {_world(ddp)} "
                         "(.grad holds that average once the backward ends)")], []
        if self._fsdp2 and sharded.is_dtensor(param):
            return [Note("grad_kind", "FSDP2: this rank's shard of the gradient, after the reduce-scatter (averaged over "
                         "the ranks, FSDP2's default): as .grad holds it")], []
        if _is_flat(param):
            return _flat(param, owner)
        return [], []

    def finals(self, params: list[tuple[str, torch.Tensor]]) -> list[FinalGrad]:
        """Once the backward has returned: the final `.grad` of each parameter whose
        `param_grad` firing showed another gradient (`params`: the model's, by the user's
        names). Reads `.grad` and FSDP1's shard layout only: no copy, no collective."""
        if self.pipeline is not None and self.pipeline.scale != 1:  # after the schedule's scaling
            note = self.pipeline.final_note()
            return [FinalGrad(name, p.grad, note, missing=None if p.grad is not None else "no .grad after the step")
                    for name, p in params if p.requires_grad]
        out = []
        for name, param in params if self._ddp else ():
            ddp = self._ddp.get(id(param))
            if ddp is None or not param.requires_grad or not self._all_reduces(ddp):
                continue  # no forward prepared DDP's all-reduce: .grad holds what param_grad showed
            made = (f"what your DDP comm hook made of the gradients of the {_world(ddp)}" if getattr(ddp, "_comm_hooks", None)
                    else f"DDP's average over the {_world(ddp)}")
            note = (f"the final .grad after the backward: {made}, what the optimizer uses (the param_grad firing "
                    "showed this rank's own gradient)")
            missing = None if param.grad is not None else "no .grad after the backward"
            out.append(FinalGrad(name, param.grad, note, missing=missing))
        for owner, flat in self.flat:
            out.extend(_flat_finals(owner, flat, self._flat_wrapper.get(id(flat))))
        return out


    def _all_reduces(self, ddp: nn.Module) -> bool:
        """Whether this backward all-reduces DDP's gradients. DDP decides in its forwards:
        `_post_forward` prepares the reducer for backward only with grad mode on and outside
        `no_sync()`, and sets `require_forward_param_sync` True iff it did. The reducer then
        stays prepared until a backward all-reduces: a later forward under `no_grad` or
        `no_sync()` sets the flag False but leaves the reducer as it was, and the backward
        all-reduces whichever forward built its graph. So any forward of the step that
        prepared it (`ddp_forward`, read after each) means an all-reduce, even with the backward
        under `no_sync()`; forwards all under `no_sync()` or `no_grad` mean none, even with the
        backward outside. No forward seen (the step ran none under hooktui's hooks): the flag as
        it stands, the last forward's. Checked against DDP's comm hook on torch 2.13
        (tests/engine/test_final_grads.py; two ranks: tests/loop/test_sharded_setups.py).
        Not seen: a forward that prepared the reducer before the step, whose backward never ran."""
        prepared = self._prepared.get(id(ddp))
        if prepared is not None:
            return prepared
        done = getattr(ddp, "require_forward_param_sync", None)
        return bool(done if done is not None else getattr(ddp, "require_backward_grad_sync", True))


def _world(ddp: nn.Module | None) -> str:
    try:
        size = ddp.process_group.size()
    except Exception:  # a process group of another kind: no number rather than a guess
        return "ranks"
    return f"{size} ranks" if size != 1 else "1 rank"


def _is_flat(param: torch.Tensor) -> bool:
    return all(hasattr(param, a) for a in ("_fqns", "_shapes", "_numels"))


def _flat(param: torch.Tensor, owner: str) -> tuple[list[str], list[Piece]]:
    fqns = [user_fqn(owner, fqn) for fqn in param._fqns]
    held = ", ".join(f"{fqn} {list(shape)}" for fqn, shape in zip(fqns, param._shapes))
    grad = param.grad
    # The flat layout: each parameter's numel, with alignment padding between them where
    # FSDP adds it (use_orig_params=True does).
    sizes = getattr(param, "_numels_with_padding", None)
    padding = getattr(param, "_is_padding_mask", None)
    if sizes is None or padding is None:
        sizes, padding = param._numels, [False] * len(param._numels)
    if grad is None or grad.dim() != 1 or grad.numel() < sum(sizes):
        return [Note("flat_param", f"FSDP1 FlatParameter holding {held}: this rank's shard of their flattened gradient")], []
    pieces, at = [], 0
    own = iter(zip(fqns, param._shapes, param._numels))
    for size, is_padding in zip(sizes, padding):
        if not is_padding:
            fqn, shape, numel = next(own)
            pieces.append(Piece(fqn, grad[at:at + numel].view(shape)))
        at += size
    note = (f"FSDP1 FlatParameter holding {held}: this rank's unsharded gradient, before FSDP's reduce-scatter "
            "(all-reduce under NO_SHARD; .grad then holds this rank's shard of the average); split back into those parameters")
    return [Note("flat_param", note)], pieces


def _flat_finals(owner: str, flat: torch.Tensor, wrapper: nn.Module | None) -> list[FinalGrad]:
    """FSDP1: after the backward a FlatParameter's .grad is this rank's shard of the averaged
    flat gradient (all of it under NO_SHARD); each named parameter's part of that shard, by
    FSDP's own layout (`_shard_param_infos`)."""
    infos = getattr(flat, "_shard_param_infos", None)
    if infos is None or len(infos) != len(flat._fqns):  # another release's layout: nothing rather than a guess
        return []
    grad = flat.grad
    if not getattr(wrapper, "_sync_gradients", True) or grad is not None and grad.shape != flat.shape:
        # Under no_sync(): no reduction in this backward; .grad holds this rank's unsharded
        # gradient, as param_grad showed it.
        return []
    names = [user_fqn(owner, fqn) for fqn in flat._fqns]
    whole = all(info.in_shard and info.numel_in_shard == numel for info, numel in zip(infos, flat._numels))
    world = _world(wrapper)
    strategy = getattr(getattr(wrapper, "sharding_strategy", None), "name", None)
    how = f"FSDP1, {strategy}" if strategy else "FSDP1"
    reduced = "reduced by your comm hook" if getattr(wrapper, "_comm_hook", None) is not None else "averaged"
    held = (f"the gradient {reduced} over the {world}, all of it on this rank ({how}), what the optimizer uses (the "
            "param_grad firing showed this rank's own gradient, before the all-reduce)" if whole else
            f"this rank's shard of the gradient {reduced} over the {world} ({how}), what the optimizer uses (the "
            "param_grad firing showed this rank's own gradient, before the reduce-scatter)")
    note = f"the final .grad after the backward: {held}"
    out = []
    for name, shape, numel, info in zip(names, flat._shapes, flat._numels, infos):
        if grad is None:
            out.append(FinalGrad(name, None, note, missing="FSDP1 left no .grad on the flat parameter holding it"))
            continue
        if not info.in_shard:
            out.append(FinalGrad(name, None, note, missing="no part of it is in this rank's shard: other ranks hold its gradient"))
            continue
        start, count = info.offset_in_shard, info.numel_in_shard
        if grad.dim() != 1 or grad.numel() < start + count:
            continue
        piece = grad[start:start + count]
        if count == numel:
            out.append(FinalGrad(name, piece.view(shape), note))
            continue
        first = info.intra_param_start_idx
        part = (f"this rank's shard holds elements {first}..{first + count - 1} of its {numel} (flattened, shape "
                f"{list(shape)}); other ranks hold the rest")
        out.append(FinalGrad(name, piece, note, part=part))
    return out


_PREFIXES = tuple(f"{attr}." for attr in set(WRAPPED_BY.values()) - {"module"})


def user_fqn(owner: str, fqn: str) -> str:
    """A FlatParameter's name for a parameter (relative to the module holding it), as the
    user names it: without wrappers' attributes, from the model's root."""
    parts = [p for p in fqn.split(".") if f"{p}." not in _PREFIXES]
    name = ".".join(parts)
    return f"{owner}.{name}" if owner else name

