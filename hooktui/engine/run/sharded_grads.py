"""The gradients FSDP keeps outside `.grad` while it accumulates, set aside for a run that
must leave the model as found (`record`), and put back after it.

Under gradient accumulation without a sync (FSDP2's `set_requires_gradient_sync(False)`,
FSDP1's `no_sync()`), a microbatch's gradient is not in the parameters' `.grad`:
- FSDP2 keeps it on each FSDPParam: the unsharded parameter's `.grad`, or
  `unsharded_accumulated_grad` (in the reduce dtype), and HSDP's partial reduce in the
  param group's `_partial_reduce_output`. The next syncing backward reduce-scatters them
  and sets them to None.
- FSDP1 keeps this rank's unsharded gradient in the FlatParameter's `.grad` (larger than
  the sharded parameter it belongs to, which PyTorch only allows through FSDP's own
  `.data` swaps), and the sharded gradient of the last synced step in `_saved_grad_shard`,
  which the next syncing backward adds to in place.
A run that only cleared `.grad` would add its gradient to these (and a syncing run would
use them up), so each is taken off for the run (None, or absent as FSDP expects it) and
the very same object put back afterwards: the run starts from a clean accumulation and
what the user had accumulated is left bit for bit.

Checked on torch 2.13, gloo (tests/loop/test_dist_round4.py). FSDP1's CPU offload keeps a
persistent `_cpu_grad` that it overwrites in place: not set aside (not covered).
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import nn

from ..capture.wrappers import class_names

_ABSENT = object()

# (object, attribute) pairs: FSDP2's per-parameter state, per param group, FSDP1's flat parameter.
_FSDP2_PARAM = ("unsharded_accumulated_grad",)
_FSDP2_GROUP = ("_partial_reduce_output",)
_FSDP1_FLAT = ("_saved_grad_shard",)  # its presence matters: FSDP accumulates into it when it exists


def put_grad(leaf: torch.Tensor, grad: torch.Tensor | None) -> None:
    """`leaf.grad = grad`, also where FSDP left a gradient of another size than the leaf's
    data (FSDP1's unsharded gradient of a resharded FlatParameter): the data is swapped for
    one of the gradient's size while it is assigned, as FSDP itself does, then put back."""
    if grad is None or grad.shape == leaf.shape:
        leaf.grad = grad
        return
    data = leaf.data
    leaf.data = torch.empty((), dtype=data.dtype, device=data.device).expand(grad.shape)
    try:
        leaf.grad = grad
    finally:
        leaf.data = data


class ShardedGrads:
    """FSDP's gradient state of `modules` (the model's, walked once), outside `.grad`."""

    def __init__(self, modules: list[tuple[str, nn.Module]]) -> None:
        self._attrs: list[tuple[object, str]] = []  # set to None / deleted for the run
        # Tensors whose .grad is FSDP's (no parameter of the model's, or not always):
        # set aside with the model's own leaves (preserve.py).
        self.leaves: list[torch.Tensor] = []
        # FSDP2 makes each parameter's unsharded one at its first all-gather, maybe in the run.
        self._fsdp2_params: list = []
        for _, module in modules:
            for group in _fsdp2_groups(module):
                self._attrs += [(group, a) for a in _FSDP2_GROUP if hasattr(group, a)]
                for fsdp_param in getattr(group, "fsdp_params", ()):
                    self._attrs += [(fsdp_param, a) for a in _FSDP2_PARAM if hasattr(fsdp_param, a)]
                    self._fsdp2_params.append(fsdp_param)
            flat = _fsdp1_flat(module)
            if flat is not None:
                self._attrs += [(flat, a) for a in _FSDP1_FLAT]
                self.leaves.append(flat)  # unregistered with use_orig_params=True

    def set_aside(self) -> list:
        """Clear every attribute; returns what to give `put_back`."""
        saved = [(obj, attr, getattr(obj, attr, _ABSENT)) for obj, attr in self._attrs]
        for obj, attr, value in saved:
            if attr in _FSDP1_FLAT:
                if value is not _ABSENT:
                    delattr(obj, attr)
            elif value is not None:
                setattr(obj, attr, None)
        unsharded = [(p, _unsharded(p)) for p in self._fsdp2_params]
        grads = [(p, None if u is None else u.grad) for p, u in unsharded]
        for _, u in unsharded:
            if u is not None:
                u.grad = None
        return [saved, grads]

    @staticmethod
    def put_back(state: list) -> None:
        saved, grads = state
        for fsdp_param, grad in grads:  # None where it had none, or no unsharded parameter yet
            u = _unsharded(fsdp_param)
            if u is not None:
                put_grad(u, grad)
        for obj, attr, value in saved:
            if value is _ABSENT:
                if hasattr(obj, attr):
                    delattr(obj, attr)
            else:
                setattr(obj, attr, value)


def _unsharded(fsdp_param) -> torch.Tensor | None:
    u = getattr(fsdp_param, "_unsharded_param", None)
    return u if isinstance(u, torch.Tensor) else None


def _fsdp2_groups(module: nn.Module) -> Iterator:
    if "FSDPModule" not in class_names(type(module)):
        return iter(())
    state = getattr(module, "_get_fsdp_state", None)
    try:
        state = state() if state is not None else None
    except Exception:  # another torch's layout: nothing set aside
        return iter(())
    groups = getattr(state, "_fsdp_param_groups", None)
    if groups is None:  # torch before param groups were a list
        group = getattr(state, "_fsdp_param_group", None)
        groups = [] if group is None else [group]
    return iter(list(groups))


def _fsdp1_flat(module: nn.Module) -> torch.Tensor | None:
    if "FullyShardedDataParallel" not in class_names(type(module)):
        return None
    flat = getattr(module, "_flat_param", None)
    return flat if isinstance(flat, torch.Tensor) and hasattr(flat, "_fqns") else None
