"""Leave the user's model as it was found: gradients and buffers are put back after a run."""

from __future__ import annotations

from contextlib import contextmanager

import torch
from torch import nn
from torch.nn.parameter import is_lazy

from ..capture.model_walk import ModelWalk
from ..capture.naming import call_tensors
from .sharded_grads import ShardedGrads, put_grad


@contextmanager
def preserved_model_state(model: nn.Module, args: tuple, kwargs: dict, walk: ModelWalk | None = None):
    """Run with every leaf's `.grad` cleared, then restore the original `.grad` objects
    (backward would otherwise accumulate into them) and every buffer's values (BatchNorm
    running stats move in a training-mode forward). FSDP's gradients held outside `.grad`
    while it accumulates are set aside and put back the same way (sharded_grads.py)."""
    walk = walk or ModelWalk(model)
    sharded = ShardedGrads(walk.modules)
    leaves = [p for _, p in walk.params] + [t for _, t in call_tensors(args, kwargs) if t.is_leaf and t.requires_grad]
    leaves = list({id(leaf): leaf for leaf in leaves + sharded.leaves}.values())
    grads = [(leaf, leaf.grad) for leaf in leaves]
    # A lazy module's uninitialised buffers are materialised by the first forward, as in
    # a plain run: there is nothing to put back.
    buffers = [(b, b.detach().clone()) for _, b in walk.buffers if not is_lazy(b)]
    for leaf in leaves:
        leaf.grad = None
    aside = sharded.set_aside()
    try:
        yield
    finally:
        sharded.put_back(aside)
        for leaf, grad in grads:
            put_grad(leaf, grad)
        with torch.no_grad():
            for buffer, saved in buffers:
                buffer.copy_(saved)
