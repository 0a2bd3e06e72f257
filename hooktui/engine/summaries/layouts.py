"""Tensors that are not one dense block of values: nested and sparse tensors.

Neither has what a dense summary reads (a nested tensor has no `shape`: "NestedTensorImpl
doesn't support sizes"; a sparse one has no strides), so each is summarised through the
dense tensor of the values it stores, and its record says how those values sit in the
whole (records.LayoutRecord):

- a nested tensor (`TransformerEncoder(enable_nested_tensor=True)` with a padding mask,
  `torch.nested`): its components, each component's shape, and their values one after
  the other (joined along the first dimension when they agree on the others, as
  `NestedTensor.values()` holds them). The record's shape is that of the padded tensor
  (`torch.nested.to_padded_tensor`), the largest size of each dimension;
- a sparse tensor (the gradient of `Embedding(sparse=True)`): coalesced first, as its
  values are summed into a dense `.grad` (an index stored twice is one row, its values
  added), then the values of the stored rows and the index of each. CSR, CSC and block
  layouts are turned into COO the same way.

The index is read to the host at the firing (a sparse gradient's row indices are few
and not worth a deferred path).
"""

from __future__ import annotations

import torch

from ..records.records import LayoutRecord

# Stored rows whose index is kept, components whose shape is kept (a trace file's limit).
INDEX_MAX = 1 << 16

_SPARSE = (torch.sparse_coo, torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr, torch.sparse_bsc)


def is_laid_out(tensor: torch.Tensor) -> bool:
    """Whether `tensor` is nested or sparse (summarised here, not as a dense block)."""
    return tensor.is_nested or tensor.layout in _SPARSE


def shape_of(tensor: torch.Tensor) -> tuple[int, ...]:
    """`tensor.shape`, or a nested tensor's padded shape (it has no shape of its own)."""
    if tensor.is_nested:
        return tuple(padded_shape([list(p.shape) for p in tensor.unbind()]))
    return tuple(tensor.shape)


def padded_shape(parts: list[list[int]]) -> list[int]:
    """[components, largest size of each dimension]: the shape `to_padded_tensor` gives."""
    if not parts:
        return [0]
    dims = max(len(p) for p in parts)
    return [len(parts)] + [max((p[d] if d < len(p) else 1) for p in parts) for d in range(dims)]


def stored_values(tensor: torch.Tensor, index_max: int = INDEX_MAX) -> tuple[list[int], torch.Tensor, LayoutRecord]:
    """(the record's shape, the dense tensor of the stored values, the layout record).
    `index_max`: the stored rows whose index is kept (as many as the value block can hold)."""
    with torch.no_grad():
        tensor = tensor.detach()
        if tensor.is_nested:
            return _nested(tensor)
        return _sparse(tensor, index_max)


def _nested(tensor: torch.Tensor) -> tuple[list[int], torch.Tensor, LayoutRecord]:
    components = tensor.unbind()
    parts = [list(c.shape) for c in components]
    if not components:
        values = torch.empty(0, dtype=tensor.dtype, device=tensor.device)
    elif all(len(p) >= 1 and p[1:] == parts[0][1:] for p in parts):
        values = torch.cat(components)  # (sum of the first sizes, *the other sizes)
    else:
        values = torch.cat([c.reshape(-1) for c in components])
    return padded_shape(parts), values, LayoutRecord(kind="nested", stored=list(values.shape), parts=parts[:INDEX_MAX])


def _sparse(tensor: torch.Tensor, index_max: int) -> tuple[list[int], torch.Tensor, LayoutRecord]:
    kind = str(tensor.layout).removeprefix("torch.")
    coo = tensor if tensor.layout == torch.sparse_coo else tensor.to_sparse_coo()
    # coalesce() returns the tensor itself when it is coalesced already: the values are
    # then the model's own storage, copied by the snapshot taken from them.
    coo = coo.coalesce()
    values = coo.values()
    rows = min(values.shape[0], index_max, INDEX_MAX) if values.dim() else 0
    index = coo.indices()[:, :rows].t().tolist()
    return list(tensor.shape), values, LayoutRecord(kind=kind, stored=list(values.shape), index=index)
