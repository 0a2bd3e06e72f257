"""DTensors (FSDP2's parameters and their gradients, tensor parallel's activations) shown as
what they are, with no collective.

A DTensor is one rank's local tensor plus where it sits in a global one (placements on a
device mesh). Anything that reads its values as a whole (`full_tensor()`, a reduction, a
`.item()`) redistributes it: a collective, which run from a hook on one rank can hang the
others, and which inside FSDP's reduce-scatter changes the run. So hooktui reads only
the local tensor (`_local_tensor`, what `to_local()` returns, without an autograd node)
and says what it is a part of: global shape, local shape and offset, placements, mesh.

torch.distributed.tensor is never imported here: a DTensor exists only once it has been.
"""

from __future__ import annotations

import sys
from typing import Any

import torch

from ..records.notes import Note


def dtensor_type() -> type | None:
    module = sys.modules.get("torch.distributed.tensor")
    return None if module is None else getattr(module, "DTensor", None)


def is_dtensor(tensor: Any) -> bool:
    if type(tensor) is torch.Tensor:
        return False  # the common case, decided without a look-up
    kind = dtensor_type()
    return kind is not None and isinstance(tensor, kind)


def local(tensor: torch.Tensor) -> torch.Tensor:
    """This rank's part of a DTensor, detached (no autograd node, no collective); any other
    tensor as it is."""
    if not is_dtensor(tensor):
        return tensor
    part = getattr(tensor, "_local_tensor", None)
    if part is None:  # a release without the attribute
        part = tensor.detach().to_local()
    return part.detach()


def describe_placement(tensor: torch.Tensor, part: torch.Tensor) -> str:
    """The note on a DTensor's record: what its local part is of."""
    placements = tuple(tensor.placements)
    mesh = tensor.device_mesh
    where = f"mesh {tuple(mesh.shape)} on {mesh.device_type}"
    if mesh.mesh_dim_names:
        where += f" (dims {', '.join(mesh.mesh_dim_names)})"
    coordinate = _quiet(mesh.get_coordinate)
    if coordinate is not None:
        where += f", this rank at {tuple(coordinate)}"
    offset = _offset(tensor)
    at = f" at offset {offset}" if offset is not None and any(offset) else ""
    text = (f"DTensor: statistics and values are this rank's local part, shape {list(part.shape)}{at}, of a global "
            f"{list(tensor.shape)}; placements {_placements(placements)} on {where}")
    partial = [p for p in placements if getattr(p, "is_partial", lambda: False)()]
    if partial:
        op = getattr(partial[0], "reduce_op", "sum")
        text += (f"; Partial({op}): these values are partial, the tensor is the {op} of every rank's part "
                 "(hooktui runs no collective to combine them)")
    return Note("dtensor_local", text)


def placements_text(tensor: torch.Tensor) -> str:
    return _placements(tuple(tensor.placements))


def _placements(placements: tuple) -> str:
    return "(" + ", ".join(_placement(p) for p in placements) + ")"


def _placement(p: Any) -> str:
    if getattr(p, "is_shard", lambda: False)():
        return f"Shard({p.dim})"
    if getattr(p, "is_replicate", lambda: False)():
        return "Replicate()"
    if getattr(p, "is_partial", lambda: False)():
        return f"Partial({getattr(p, 'reduce_op', 'sum')})"
    return str(p)


def _offset(tensor: torch.Tensor) -> tuple[int, ...] | None:
    """Where the local part starts in the global tensor (from the mesh coordinate alone)."""
    try:
        from torch.distributed.tensor._utils import compute_local_shape_and_global_offset
    except ImportError:
        return None
    result = _quiet(compute_local_shape_and_global_offset, tensor.shape, tensor.device_mesh, tensor.placements)
    return None if result is None else tuple(int(v) for v in result[1])


def _quiet(fn, *args):
    try:
        return fn(*args)
    except Exception:  # a fact left out, never a failure of the record
        return None
