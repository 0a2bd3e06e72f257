"""Tensors a hook sees inside a torch.func transform (vmap, grad, jacrev, per-sample gradients).

There a module's hooks get wrapper tensors (BatchedTensor, GradTrackingTensor) that live only
while the transform runs: a snapshot of one read afterwards raises "tensor escaped vmap".
hooktui records the value underneath instead, taken at the firing: under vmap the whole
batch, its batch dimension moved first (the hook sees one sample), and a note on the record
says so.
"""

from __future__ import annotations

import torch

try:
    from torch._C import _functorch as _F
except ImportError:  # a build without functorch: nothing is ever wrapped
    _F = None


def is_wrapped(tensor: torch.Tensor) -> bool:
    return _F is not None and _F.is_functorch_wrapped_tensor(tensor)


def unwrapped(tensor: torch.Tensor) -> tuple[torch.Tensor, str]:
    """(the plain tensor under every transform level, a note saying what it is)."""
    seen_shape = list(tensor.shape)
    batches: list[int] = []
    grad_levels = 0
    for _ in range(32):
        if not is_wrapped(tensor):
            break
        if _F.is_batchedtensor(tensor):
            bdim = _F.maybe_get_bdim(tensor)
            tensor = _F.get_unwrapped(tensor).movedim(bdim, 0)
            batches.append(tensor.shape[0])
        else:
            tensor = _F.get_unwrapped(tensor)
            grad_levels += 1
    parts = []
    if batches:
        sizes = " x ".join(str(b) for b in reversed(batches))
        parts.append(f"inside torch.vmap: the hook sees one sample, shape {seen_shape}; shown: every sample ({sizes}), "
                     "the batch dimensions first")
    if grad_levels:
        parts.append("inside a torch.func gradient transform: shown is the value under its wrapper")
    return tensor, "; ".join(parts)
