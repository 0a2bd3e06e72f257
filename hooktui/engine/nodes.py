"""Autograd node introspection: real names, next_functions trees, saved tensor shapes.

A firing's node is described `depth` levels deep (its next_functions, theirs, ...), and
most firings share most of those nodes, so descriptions are cached and shared, and
what can change is tracked rather than read again at every firing. A node's name, its
creation order and its inputs never change; its saved tensors can only go from present
to freed, and only once it has started running in a backward that frees the graph
(PyTorch releases them right after the node ran, after its post-hooks). So:

- each node's facts are read once, when it is first described;
- capture.py tells this module when a node is about to run (`node_started`, from the
  pre-hook it puts on every node of a backward's graph); from then on the node is
  *volatile*: its saved tensors are read again whenever it is described, until they are
  seen freed, which is final;
- a described tree is reused as it is while none of its nodes is volatile or has started
  since it was built; otherwise it is rebuilt from its (mostly reused) subtrees.

What a firing records is therefore what reading every node at the firing would give
(tests/engine/test_node_records.py checks it against such an eager reading), at the cost
of a few lookups per firing. A backward that hooktui did not notice (backward_calls.py)
falls back to reading every node at every firing.
"""

from __future__ import annotations

import itertools

import torch

from .records import NodeRecord

# Wrappers PyTorch's own hook machinery inserts; the real node sits behind them.
_WRAPPERS = ("BackwardHookFunctionBackward",)
_ACCUMULATE = "torch::autograd::AccumulateGrad"
FREED = "freed"

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


class _Facts:
    """What is known of one node: read once, except `saved` while the node is volatile."""

    __slots__ = ("node", "name", "seq_nr", "saved", "nexts")

    def __init__(self, node) -> None:
        self.node = node  # held, so that its id is not recycled while cached
        self.name = name_of(node)
        self.seq_nr = _seq_nr(node)
        self.saved = _read_saved(node)
        self.nexts = node.next_functions


# A described tree: (node, record, ids of its nodes, tick it was built at, complete, depth).
# Complete: no node of it was cut off by the depth, so the same record serves any
# greater depth.
_Tree = tuple

class _State:
    """Caches for one run (cleared when it ends: they hold nodes)."""

    def __init__(self) -> None:
        self.facts: dict[int, _Facts] = {}
        self.trees: dict[tuple[int, int], _Tree] = {}
        self.complete: dict[int, _Tree] = {}
        # Nodes that started running and whose saved tensors were not yet seen freed.
        self.volatile: dict[int, object] = {}
        # id(node) -> the tick at which its saved tensors last started or stopped
        # changing (never: absent). A tree built before that tick may be stale.
        self.changed: dict[int, int] = {}
        self.ticks = itertools.count(1)
        self.tick = 0
        # Backwards in progress that capture.py noticed (those outside them are read eagerly).
        self.noticed = 0


_state = _State()
# Cached trees beyond this are dropped (all at once); the volatile bookkeeping is kept.
_TREES_MAX = 1 << 16


def forget_node_records() -> None:
    """Drop the caches (and the nodes they hold) when a run ends."""
    global _state
    _state = _State()


def backward_started() -> None:
    """A backward that hooktui noticed starts (capture.py puts `node_started` on its nodes)."""
    _state.noticed += 1


def backward_ended() -> None:
    _state.noticed = max(0, _state.noticed - 1)


def node_started(node) -> None:
    """`node` is about to run in a backward that frees the graph: its saved tensors may
    be released from now on."""
    if _saved_slots(node):
        state = _state
        state.volatile[id(node)] = node
        _changed(state, node)


def _changed(state: _State, node) -> None:
    state.tick = next(state.ticks)
    state.changed[id(node)] = state.tick


def describe_node(node, depth: int = 3, breadth: int = 6) -> NodeRecord | None:
    """A NodeRecord for `node` with its next_functions `depth` levels deep, as reading
    every node now would give; shared with earlier firings wherever nothing changed."""
    node = real_node(node)
    if node is None:
        return None
    state = _state
    eager = state.noticed == 0 and torch._C._current_graph_task_id() != -1
    return _tree(state, node, depth, breadth, eager)[1]


def _tree(state: _State, node, depth: int, breadth: int, eager: bool) -> _Tree:
    nid = id(node)
    key = (nid, depth)
    tree = state.trees.get(key)
    if tree is None:
        tree = state.complete.get(nid)
        if tree is not None and tree[5] > depth:
            tree = None
    if tree is not None and tree[0] is node and not eager and _still_valid(state, tree):
        return tree
    facts = state.facts.get(nid)
    if facts is None or facts.node is not node:
        facts = state.facts[nid] = _Facts(node)
    elif eager or nid in state.volatile:
        saved = _read_saved(node, facts.saved)
        if saved is not facts.saved:
            facts.saved = saved
            _changed(state, node)
    if nid in state.volatile and _is_final(facts.saved):
        del state.volatile[nid]
        _changed(state, node)
    nexts = facts.nexts
    children: list[NodeRecord | None] = []
    members: tuple[int, ...] = (nid,)
    if depth > 0:
        complete = True
        for child, _ in nexts[:breadth]:
            if child is None:
                children.append(None)
                continue
            sub = _tree(state, child, depth - 1, breadth, eager)
            children.append(sub[1])
            members += sub[2]
            complete = complete and sub[4]
        truncated = len(nexts) > breadth
    else:
        truncated = bool(nexts)
        complete = not nexts
    old = tree[1] if tree is not None and tree[0] is node else None
    if (
        old is not None
        and old.saved is facts.saved
        and len(old.next) == len(children)
        and all(a is b for a, b in zip(old.next, children))
    ):
        record = old
    else:
        record = NodeRecord(name=facts.name, seq_nr=facts.seq_nr, next=children, saved=facts.saved, truncated=truncated)
    if len(state.trees) >= _TREES_MAX:
        state.trees.clear()
        state.complete.clear()
        state.facts.clear()
    tree = (node, record, members, state.tick, complete, depth)
    state.trees[key] = tree
    if complete and (nid not in state.complete or state.complete[nid][5] >= depth):
        state.complete[nid] = tree
    return tree


def _still_valid(state: _State, tree: _Tree) -> bool:
    """No node of the tree is volatile, and none changed after the tree was built."""
    members = tree[2]
    if not state.volatile.keys().isdisjoint(members):
        return False
    changed = state.changed
    if not changed:
        return True
    return max(map(changed.get, members, itertools.repeat(0))) <= tree[3]


def _is_final(saved: dict) -> bool:
    """No saved tensor of the node is left (freed, or never defined): nothing about it
    can change now."""
    return all(value == FREED for value in saved.values())


# One dict per distinct set of saved shapes ({"mat1": [32, 64], "mat2": [64, 64]} recurs
# in every layer of a stack): records share them, and never modify them.
_SAVED: dict[tuple, dict] = {}
_SAVED_MAX = 1 << 14


def _interned(saved: dict) -> dict:
    key = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in saved.items())
    shared = _SAVED.get(key)
    if shared is None:
        if len(_SAVED) >= _SAVED_MAX:
            _SAVED.clear()
        shared = _SAVED[key] = saved
    return shared


_NO_SAVED: dict = _interned({})


def _read_saved(node, before: dict | None = None) -> dict:
    """The node's saved tensors as they are now (shared dict, never modified); `before`:
    the node's last reading."""
    saved = _saved_shapes(node, before)
    if name_of(node) == _ACCUMULATE:
        variable = getattr(node, "variable", None)
        if isinstance(variable, torch.Tensor):
            saved["variable"] = list(variable.shape)
    return _interned(saved) if saved else _NO_SAVED


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
_SAVED_SLOTS: dict[type, tuple[tuple[str, str, str], ...]] = {}


def _saved_slots(node) -> tuple[tuple[str, str, str], ...]:
    kind = type(node)
    slots = _SAVED_SLOTS.get(kind)
    if slots is None:
        names = set(dir(node))
        slots = _SAVED_SLOTS[kind] = tuple(
            (attr.removeprefix("_saved_"), attr, "_raw" + attr)
            for attr in sorted(names)
            if attr.startswith("_saved_") and not attr.startswith("_saved_raw") and "_raw" + attr in names
        )
    return slots


def _saved_shapes(node, before: dict | None) -> dict[str, list[int] | str]:
    """Shapes of the node's saved tensors (`_saved_*`), or why they are gone.

    Read through the raw SavedTensor (`_raw_saved_*`): its `data` is the saved tensor,
    or None once freed, without unpacking. Unpacking a freed one raises, and PyTorch
    builds that error at a cost of ~40 us: read only when `data` cannot tell a freed
    tensor from one never saved (None), i.e. without `before`, an earlier reading of
    the same node."""
    saved: dict[str, list[int] | str] = {}
    for key, attr, raw_attr in _saved_slots(node):
        try:
            raw = getattr(node, raw_attr)
        except RuntimeError:  # a list of saved tensors, freed
            saved[key] = FREED
            continue
        if isinstance(raw, (tuple, list)):
            if any(getattr(item, "unpack_hook", None) is not None for item in raw):
                saved[key] = PACKED
            elif raw and all(isinstance(getattr(item, "data", None), torch.Tensor) for item in raw):
                saved[key] = f"{len(raw)} tensors"
            else:
                _unpack(node, key, attr, saved)
            continue
        if getattr(raw, "unpack_hook", None) is not None:
            # Unpacking would run the hook: activation checkpointing recomputes the
            # forward there, and a second unpack in backward then fails.
            saved[key] = PACKED
            continue
        data = getattr(raw, "data", None)
        if isinstance(data, torch.Tensor):
            saved[key] = list(data.shape)
        elif before is None:
            _unpack(node, key, attr, saved)
        elif key in before:
            saved[key] = FREED  # it held a tensor when last read
    return saved


PACKED = "packed by a saved-tensor hook"


def _unpack(node, key: str, attr: str, saved: dict) -> None:
    try:
        value = getattr(node, attr)
    except RuntimeError:
        saved[key] = FREED
        return
    if isinstance(value, torch.Tensor):
        saved[key] = list(value.shape)
    elif isinstance(value, (tuple, list)) and value and all(isinstance(v, torch.Tensor) for v in value):
        saved[key] = f"{len(value)} tensors"
