"""Which gradient a `param_grad` firing shows, under data-parallel wrappers.

The firing comes from the parameter's post-accumulate-grad hook, which runs as autograd
writes `.grad`, before the wrapper's own communication:
- DDP: this rank's gradient, before the all-reduce (DDP writes the average over the ranks
  into `.grad` when the backward ends; not under `no_sync`).
- FSDP2 (`fully_shard`): the parameter is a DTensor shard, and the hook runs once the
  reduce-scatter has written this rank's shard of the (averaged) gradient.
- FSDP1 with flat parameters: one FlatParameter holds several of the user's parameters;
  the hook sees the unsharded flat gradient of this rank before the reduce-scatter, which
  is split back into the named parameters (`_fqns`, `_shapes`, `_numels_with_padding`).
Checked on torch 2.13, gloo (tests/loop/test_distributed.py, test_fsdp2.py,
test_wrapper_names.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from . import sharded
from .wrappers import WRAPPED_BY


@dataclass(frozen=True)
class Piece:
    """One named parameter's part of a FlatParameter's gradient."""

    name: str  # the user's name of the parameter
    tensor: torch.Tensor


class GradKinds:
    def __init__(self, modules: list[tuple[str, nn.Module]]) -> None:
        # id(param) -> the DDP wrapper that all-reduces its gradient.
        self._ddp: dict[int, nn.Module] = {}
        self._fsdp2 = False
        # FSDP1's flat parameters, with the name of the module they are split over: with
        # use_orig_params=True they are no registered parameter (the model's parameters get
        # their .grad from FSDP, not from autograd), so param_grads.py hooks them here.
        self.flat: list[tuple[str, torch.Tensor]] = []
        for name, module in modules:
            names = {cls.__name__ for cls in type(module).__mro__}
            if "DistributedDataParallel" in names:
                for param in module.parameters():
                    self._ddp[id(param)] = module
            self._fsdp2 = self._fsdp2 or "FSDPModule" in names
            if "FullyShardedDataParallel" in names:
                flat = getattr(module, "_flat_param", None)
                if flat is not None and _is_flat(flat):
                    self.flat.append((name.removesuffix(f"[{type(module).__name__}]"), flat))

    def notes(self, param: torch.Tensor, owner: str) -> tuple[list[str], list[Piece]]:
        """What to say on the firing of `param` (held by the module shown as `owner`), and
        the named parts of a FlatParameter's gradient."""
        ddp = self._ddp.get(id(param))
        if ddp is not None:
            if not getattr(ddp, "require_backward_grad_sync", True):
                return ["DDP under no_sync(): this rank's gradient, accumulated locally; no all-reduce in this backward"], []
            return [f"DDP: this rank's gradient, before DDP averages it over the {_world(ddp)} "
                    "(.grad holds that average once the backward ends)"], []
        if self._fsdp2 and sharded.is_dtensor(param):
            return ["FSDP2: this rank's shard of the gradient, after the reduce-scatter (averaged over the ranks, "
                    "FSDP2's default): as .grad holds it"], []
        if _is_flat(param):
            return _flat(param, owner)
        return [], []


def _world(ddp: nn.Module) -> str:
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
        return [f"FSDP1 FlatParameter holding {held}: this rank's shard of their flattened gradient"], []
    pieces, at = [], 0
    own = iter(zip(fqns, param._shapes, param._numels))
    for size, is_padding in zip(sizes, padding):
        if not is_padding:
            fqn, shape, numel = next(own)
            pieces.append(Piece(fqn, grad[at:at + numel].view(shape)))
        at += size
    note = (f"FSDP1 FlatParameter holding {held}: this rank's unsharded gradient, before FSDP's reduce-scatter "
            "(all-reduce under NO_SHARD; .grad then holds this rank's shard of the average); split back into those parameters")
    return [note], pieces


_PREFIXES = tuple(f"{attr}." for attr in set(WRAPPED_BY.values()) - {"module"})


def user_fqn(owner: str, fqn: str) -> str:
    """A FlatParameter's name for a parameter (relative to the module holding it), as the
    user names it: without wrappers' attributes, from the model's root."""
    parts = [p for p in fqn.split(".") if f"{p}." not in _PREFIXES]
    name = ".".join(parts)
    return f"{owner}.{name}" if owner else name
