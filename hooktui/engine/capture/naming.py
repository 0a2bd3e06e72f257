"""Flatten the nested arguments and outputs of a module call into named tensors.

Names say where a tensor sits: `args[0]`, `kwargs['mask']`, `output[1]['logits']`,
`output.last_hidden_state` (dataclass field).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

import torch

MAX_DEPTH = 8


def named_tensors(value: Any, prefix: str, depth: int = 0) -> Iterator[tuple[str, torch.Tensor]]:
    """Every tensor inside `value` (tuples, lists, dicts, dataclasses), depth first."""
    if isinstance(value, torch.Tensor):
        yield prefix, value
    elif depth >= MAX_DEPTH:
        return
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from named_tensors(item, f"{prefix}[{key!r}]", depth + 1)
    elif isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            yield from named_tensors(item, f"{prefix}[{i}]", depth + 1)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from named_tensors(getattr(value, f.name, None), f"{prefix}.{f.name}", depth + 1)


# "args[0]", "grad_input[1]", ...: one string each, shared by every record that names it.
_INDEXED: dict[tuple[str, int], str] = {}


def indexed(prefix: str, i: int) -> str:
    """f"{prefix}[{i}]", the same string object every time."""
    name = _INDEXED.get((prefix, i))
    if name is None:
        name = f"{prefix}[{i}]"
        if len(_INDEXED) < 4096:
            _INDEXED[(prefix, i)] = name
    return name


def arg_name(i: int) -> str:
    return indexed("args", i)


def call_tensors(args: tuple, kwargs: Mapping[str, Any]) -> list[tuple[str, torch.Tensor]]:
    tensors = []
    for i, arg in enumerate(args):
        if isinstance(arg, torch.Tensor):  # the common case, without a generator
            tensors.append((arg_name(i), arg))
        else:
            tensors.extend(named_tensors(arg, arg_name(i)))
    for key, value in kwargs.items():
        tensors.extend(named_tensors(value, f"kwargs[{key!r}]"))
    return tensors
