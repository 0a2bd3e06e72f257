"""Autograd node introspection: real names, next_functions trees, saved tensor shapes."""

from __future__ import annotations

import torch

from .records import NodeRecord

# Wrappers PyTorch's own hook machinery inserts; the real node sits behind them.
_WRAPPERS = ("BackwardHookFunctionBackward",)


# node.name() demangles a C++ type name on every call (tens of microseconds); the Python
# type of a node is one per node class, so its name is cached per type.
_NAMES: dict[type, str] = {}


def name_of(node) -> str:
    kind = type(node)
    name = _NAMES.get(kind)
    if name is None:
        name = _NAMES[kind] = node.name()
    return name


def real_node(node):
    """Look through hook wrapper nodes to the node that does the work."""
    seen = 0
    while node is not None and name_of(node) in _WRAPPERS and seen < 16:
        nexts = [n for n, _ in node.next_functions if n is not None]
        node = nexts[0] if nexts else None
        seen += 1
    return node


def node_name(node) -> str | None:
    node = real_node(node)
    return None if node is None else name_of(node)


def describe_node(node, depth: int = 3, breadth: int = 6) -> NodeRecord | None:
    """A NodeRecord for `node` with its next_functions `depth` levels deep.

    Records are shared between firings whose trees have nodes in common (most of them):
    outside backward no node has run, so a cached record is used as it is; in backward
    nodes run and free their saved tensors, so each node's saved shapes are read again
    and its cached record is used only if they and its children's records are unchanged.
    """
    node = real_node(node)
    if node is None:
        return None
    return _describe(node, depth, breadth, trust=torch._C._current_graph_task_id() == -1)


# (id(node), depth) -> (node, record); the entry holds the node itself so the id cannot
# be recycled while it is cached. Cleared when a run ends.
_RECORDS: dict[tuple[int, int], tuple[object, NodeRecord]] = {}
_RECORDS_MAX = 4096


def forget_node_records() -> None:
    """Drop the cached records (and the nodes they hold) when a run ends."""
    _RECORDS.clear()
    _SAVED.clear()


# One dict per distinct set of saved shapes ({"mat1": [32, 64], "mat2": [64, 64]} recurs
# in every layer of a stack): records share them, and never modify them.
_SAVED: dict[tuple, dict] = {}


def _interned(saved: dict) -> dict:
    key = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in saved.items())
    shared = _SAVED.get(key)
    if shared is None:
        if len(_SAVED) >= _RECORDS_MAX:
            _SAVED.clear()
        shared = _SAVED[key] = saved
    return shared


def _describe(node, depth: int, breadth: int, trust: bool) -> NodeRecord:
    key = (id(node), depth)
    hit = _RECORDS.get(key)
    cached = hit[1] if hit is not None and hit[0] is node else None
    if cached is not None and trust:
        return cached
    saved = _saved_shapes(node)
    if name_of(node) == "torch::autograd::AccumulateGrad":
        variable = getattr(node, "variable", None)
        if isinstance(variable, torch.Tensor):
            saved["variable"] = list(variable.shape)
    saved = _interned(saved)
    nexts = node.next_functions
    children: list[NodeRecord | None] = []
    if depth > 0:
        children = [_describe(n, depth - 1, breadth, trust) if n is not None else None for n, _ in nexts[:breadth]]
    if (
        cached is not None
        and cached.saved == saved
        and len(cached.next) == len(children)
        and all(a is b for a, b in zip(cached.next, children))
    ):
        return cached
    record = NodeRecord(
        name=name_of(node),
        seq_nr=_seq_nr(node),
        saved=saved,
        next=children,
        truncated=len(nexts) > breadth if depth > 0 else bool(nexts),
    )
    if len(_RECORDS) >= _RECORDS_MAX:
        _RECORDS.clear()
    _RECORDS[key] = (node, record)
    return record


def seq_of(node) -> int:
    """The node's creation order (-1 when it cannot be read). AccumulateGrad nodes
    have the largest possible number."""
    try:
        return int(node._sequence_nr())
    except RuntimeError:
        return -1


def in_seq_range(node, start: int, end: int) -> bool:
    return start <= seq_of(node) < end


# AccumulateGrad nodes carry the largest 64-bit number as their sequence number: they are
# not created by an op, so they have no place in the creation order.
_NO_SEQ = 2**64 - 1


def _seq_nr(node) -> int | None:
    try:
        seq = int(node._sequence_nr())
        return None if seq == _NO_SEQ else seq
    except (AttributeError, RuntimeError):
        return None


# Per node class: (key, `_saved_*` attribute, its `_raw_saved_*` twin) for each saved
# slot that can hold tensors (PyTorch generates the raw twin exactly for those). Listing
# them once per class, not with dir() per node, is most of what describing a node costs.
_SAVED_SLOTS: dict[type, list[tuple[str, str, str]]] = {}


def _saved_slots(node) -> list[tuple[str, str, str]]:
    kind = type(node)
    slots = _SAVED_SLOTS.get(kind)
    if slots is None:
        names = set(dir(node))
        slots = _SAVED_SLOTS[kind] = [
            (attr.removeprefix("_saved_"), attr, "_raw" + attr)
            for attr in sorted(names)
            if attr.startswith("_saved_") and not attr.startswith("_saved_raw") and "_raw" + attr in names
        ]
    return slots


def _saved_shapes(node) -> dict[str, list[int] | str]:
    """Shapes of the node's saved tensors (`_saved_*`), or why they are gone."""
    saved: dict[str, list[int] | str] = {}
    for key, attr, raw_attr in _saved_slots(node):
        if _has_unpack_hook(node, raw_attr):
            # Unpacking would run the hook: activation checkpointing recomputes the
            # forward there, and a second unpack in backward then fails.
            saved[key] = "packed by a saved-tensor hook"
            continue
        try:
            value = getattr(node, attr)
        except RuntimeError:
            saved[key] = "freed"
            continue
        if isinstance(value, torch.Tensor):
            saved[key] = list(value.shape)
        elif isinstance(value, (tuple, list)) and value and all(isinstance(v, torch.Tensor) for v in value):
            saved[key] = f"{len(value)} tensors"
    return saved


def _has_unpack_hook(node, raw_attr: str) -> bool:
    """Whether a saved tensor (`_raw_saved_*`, not unpacked) carries a saved-tensor hook."""
    try:
        raw = getattr(node, raw_attr, None)
        if not isinstance(raw, (tuple, list)):
            return getattr(raw, "unpack_hook", None) is not None  # the common case, without a generator
        for item in raw:
            if getattr(item, "unpack_hook", None) is not None:
                return True
        return False
    except RuntimeError:
        return False
