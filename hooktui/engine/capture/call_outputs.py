"""A module call's outputs as PyTorch's full backward hooks see them: one grad_output slot
per element of a top-level output tuple (or one for a lone tensor), `None` for an element
that is not a tensor, and for a nested tuple. Tensors nested deeper get their gradient
shown too, as clearly labelled extras; dict / list / dataclass outputs (PyTorch's hooks
never fire for those) are all extras.

The one place hooktui changes what a caller receives, and why: PyTorch's hook wraps every
output tensor in a new tensor, so the gradient of *this* return value is kept apart from
every other use of the same tensor. Node hooks can only tell uses apart when the tensors
are distinct, so where the returned tensor is not the call's own work and not one of its
inputs — a Parameter returned as is, a tensor made before the call — or is returned
twice, the caller gets a view of it (`t.view_as(t)`: same storage, same values, a node of
its own). An input returned unchanged (nn.Identity, eval-mode Dropout) is left alone, since
in-place ops often follow it (a view would move them to a new node); its gradient is
gathered from the uses after the call (`passthrough`). Everything else is returned
untouched, so in-place ops on outputs keep working.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch.autograd.graph import get_gradient_edge

from ..autograd.nodes import seq_of
from .naming import indexed, named_tensors
from .shared_values import Kept

# An output's (shape, dtype, device), one copy of each (shared_values.py): a call whose
# outputs need grad keeps it until its backward.
_shared_like = Kept()


@dataclass(slots=True)
class OutputSlot:
    """One entry of the call's grad_output: a PyTorch slot, or an extra."""

    name: str  # "grad_output[1]", or "grad of output[1][0]" for an extra
    target: str  # the forward value it belongs to: "output[1]"
    edge: tuple[Any, int] | None = None  # gradient edge of the tensor (needs grad)
    missing: str | None = None  # why the slot is None (not a tensor, no grad needed)
    extra: bool = False
    note: str | None = None
    # Take the gradient from the consumers outside the call, before any tensor hook: the
    # tensor already had hooks when the call returned (registered inside the module, which
    # PyTorch runs after backward_pre), it is a nested extra, or it is an input returned.
    before_hooks: bool = False
    # The module put tensor hooks on this output inside forward: they run after PyTorch's
    # backward_pre, so what its own backward consumes can differ from grad_output.
    inner_hooks: bool = False
    # The positional input (arg index) returned here unchanged: its gradient in this
    # slot also belongs to that input's grad_input.
    passthrough: int | None = None
    # (shape, dtype, device) of the output tensor.
    like: tuple | None = None
    # A weak reference to the element of a tuple output (whether the caller hooked it).
    ref: Any = None

    def caller_hooked(self) -> bool:
        """Whether the tuple element, if still alive, carries tensor hooks (the caller's:
        those the module put on it make `before_hooks`)."""
        tensor = None if self.ref is None else self.ref()
        return tensor is not None and bool(tensor._backward_hooks)

    def zeros(self) -> torch.Tensor | None:
        if self.like is None:
            return None
        shape, dtype, device = self.like
        return torch.zeros(shape, dtype=dtype, device=device)


def output_slots(output: Any, seq_start: int, input_edges: Mapping[int, tuple[Any, int]]) -> tuple[Any, tuple[OutputSlot, ...], bool]:
    """(output to return, slots, PyTorch's hook would fire for this output).

    `input_edges`: arg index -> gradient edge of each positional input needing grad.
    Replaces (with views) the top-level output tensors whose gradient could not be told
    apart from other uses; see the module docstring. Call with grad enabled."""
    inputs = {(id(node), nr): i for i, (node, nr) in input_edges.items()}
    if isinstance(output, torch.Tensor):
        items, is_tuple = [output], False
    elif isinstance(output, tuple):
        items, is_tuple = list(output), True
    else:
        return output, tuple(_extras(output, "output", "a dict/list/object output: PyTorch's full hooks never fire for it")), False

    slots: list[OutputSlot] = []
    extras: list[OutputSlot] = []
    seen_edges: set[tuple[int, int]] = set()
    changed = False
    fires = False
    for i, item in enumerate(items):
        target = indexed("output", i) if is_tuple else "output"
        name = indexed("grad_output", i)
        if isinstance(item, torch.Tensor):
            if not item.requires_grad:
                slots.append(OutputSlot(name, target, missing="this output does not require grad"))
                continue
            fires = True
            edge = _edge(item)
            key = (id(edge[0]), edge[1])
            passthrough = inputs.get(key) if key not in seen_edges else None
            if passthrough is None and (key in seen_edges or _made_before(item, seq_start)):
                item = _own_view(item)
                items[i] = item
                changed = True
                edge = _edge(item)
                key = (id(edge[0]), edge[1])
            seen_edges.add(key)
            slots.append(
                OutputSlot(
                    name,
                    target,
                    edge=edge,
                    before_hooks=passthrough is not None or bool(item._backward_hooks),
                    inner_hooks=passthrough is None and bool(item._backward_hooks),
                    passthrough=passthrough,
                    like=_shared_like((item.shape, item.dtype, item.device)),
                    ref=_weak(item) if is_tuple else None,
                )
            )
        elif item is None:
            slots.append(OutputSlot(name, target, missing=f"{target} is None"))
        else:
            nested = _extras(item, target, f"nested in {target}, for which PyTorch's hook gets None")
            if nested:
                slots.append(OutputSlot(name, target, missing=f"{target} is a nested {type(item).__name__}: PyTorch's hook gets None"))
                extras.extend(nested)
            else:
                slots.append(OutputSlot(name, target, missing=f"{target} is not a tensor ({type(item).__name__})"))
    if changed:
        output = (_rebuild(output, items) if is_tuple else items[0])
    return output, (*slots, *extras), fires


def _edge(tensor: torch.Tensor) -> tuple[Any, int]:
    """(node, output_nr) of a tensor that requires grad: get_gradient_edge without its
    cost (a Python function building a NamedTuple) for a tensor made by an op."""
    node = tensor.grad_fn
    if node is not None:
        return node, tensor.output_nr
    edge = get_gradient_edge(tensor)
    return edge.node, edge.output_nr


def _weak(tensor: torch.Tensor):
    try:
        return weakref.ref(tensor)
    except TypeError:  # a tensor subclass without weak references
        return None


def _made_before(tensor: torch.Tensor, seq_start: int) -> bool:
    """A leaf, or a tensor whose node was created before the call started."""
    node = tensor.grad_fn
    return node is None or seq_of(node) < seq_start


def _own_view(tensor: torch.Tensor) -> torch.Tensor:
    try:
        return tensor.view_as(tensor)
    except RuntimeError:  # a layout without views: keep the tensor (its uses stay merged)
        return tensor


def _rebuild(output: tuple, items: list) -> tuple:
    if type(output) is tuple:
        return tuple(items)
    if hasattr(output, "_fields"):  # a namedtuple
        return type(output)(*items)
    return type(output)(items)


def _extras(value: Any, prefix: str, why: str) -> list[OutputSlot]:
    extras = []
    for path, tensor in named_tensors(value, prefix):
        if tensor.requires_grad:
            edge = get_gradient_edge(tensor)
            extras.append(OutputSlot(f"grad of {path}", path, edge=(edge.node, edge.output_nr), extra=True, note=why, before_hooks=True))
    return extras
