"""The inputs convention and the default loss.

Inputs: a tensor is the one positional argument; a tuple is the positional arguments;
a dict is keyword arguments; a pair `(tuple, dict)` is both. Anything else (a list, a
dataclass...) is passed as the one positional argument.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from ..capture.naming import named_tensors


def split_inputs(inputs: Any) -> tuple[tuple, dict]:
    if isinstance(inputs, tuple):
        if len(inputs) == 2 and isinstance(inputs[0], tuple) and isinstance(inputs[1], Mapping):
            return inputs[0], dict(inputs[1])
        return inputs, {}
    if isinstance(inputs, Mapping):
        return (), dict(inputs)
    return (inputs,), {}


def default_loss(output: Any) -> torch.Tensor:
    """Sum of every floating-point tensor in the output that requires grad."""
    parts = [t.sum() for _, t in named_tensors(output, "output") if t.is_floating_point() and t.requires_grad]
    if not parts:
        raise ValueError("the default loss found no floating-point output that requires grad; define loss_fn(output)")
    total = parts[0].float()
    for part in parts[1:]:
        total = total + part.float()
    return total


def map_tensors(value: Any, fn) -> Any:
    """Apply `fn` to every tensor in a nested structure of tuples, lists and dicts."""
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, tuple):
        return tuple(map_tensors(v, fn) for v in value)
    if isinstance(value, list):
        return [map_tensors(v, fn) for v in value]
    if isinstance(value, Mapping):
        return {k: map_tensors(v, fn) for k, v in value.items()}
    return value
