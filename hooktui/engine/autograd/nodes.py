"""Autograd node introspection: real names, next_functions trees, saved tensor shapes.

A firing's node is described `depth` levels deep (its next_functions, theirs, ...). Most
firings share most of those nodes, and a description is mostly read by nobody (a run
through) or for one firing at a time (the app), so at the firing only what could be lost
is taken, and the records are built when first read:

- each node's facts (name, creation order, inputs, saved tensors) are read once, when it
  first appears in a firing's tree; they hold no tensor;
- a node's saved tensors can only go from present to freed, and only once it has
  started running in a backward that frees the graph (PyTorch releases them right after
  the node and its post-hooks ran). capture/tracer.py says when a node is about to run
  (`node_started`, from the pre-hook it puts on every node of a backward's graph); such
  a node is *volatile* until its saved tensors are seen freed: at every firing, the
  volatile nodes are read again, and each change is kept with the tick it was seen at;
- a firing keeps its root's facts and the current tick (`LazyNodeRecord`); reading it
  builds the NodeRecord tree as it was at that tick, shared with every other firing
  that saw the same states.

What a firing records is therefore what reading every node at the firing would give
(tests/engine/test_node_records.py checks it against such an eager reading), for a few
lookups per firing. A backward that hooktui did not notice (backward_calls.py) falls back
to reading every node of the tree at every firing.
"""

from __future__ import annotations

import torch

from ..records.records import NodeRecord

# Wrappers PyTorch's own hook machinery inserts; the real node sits behind them.
_WRAPPERS = ("BackwardHookFunctionBackward",)
ACCUMULATE = "torch::autograd::AccumulateGrad"
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
    """One node, as read when it first appeared in a firing's tree. `saved`: its saved
    tensors then; `changes`: [(tick, saved)] seen since, in tick order (None unless it ran
    in a backward)."""

    __slots__ = ("node", "name", "seq_nr", "n_next", "children", "reach", "saved", "changes")

    def __init__(self, node) -> None:
        self.node = node  # while the run lasts: keeps its id from being recycled
        self.name = name_of(node)
        self.seq_nr = _seq_nr(node)
        self.n_next = len(node.next_functions)
        self.children: tuple[_Facts | None, ...] | None = None  # the first BREADTH next_functions
        self.reach = -1  # the depth to which the facts below it exist
        self.saved = _read_saved(node)
        self.changes: list[tuple[int, dict]] | None = None

    def last_saved(self) -> dict:
        return self.saved if self.changes is None else self.changes[-1][1]

    def saved_at(self, tick: int) -> tuple[int, dict]:
        """(tick of the reading in force at `tick`, the saved tensors then). Every firing
        that shows this node came after the first reading."""
        changes = self.changes
        if changes is not None:
            for i in range(len(changes) - 1, -1, -1):
                if changes[i][0] <= tick:
                    return changes[i]
        return 0, self.saved


# next_functions shown per node; deeper or wider is marked `truncated`.
BREADTH = 6


class LazyNodeRecord(NodeRecord):
    """A NodeRecord built when read from the facts taken at its firing (see the module
    docstring); equal to the record an eager reading at the firing would give.

    The built tree is not kept by the record (only in a bounded cache shared by all): a
    firing read once, as `trace` and `--save` read every firing, then holds its facts and
    nothing more (the built trees were ~0.45 KB a firing)."""

    __slots__ = ("_facts", "_depth", "_tick")

    def __getattr__(self, name: str):
        if name not in _NODE_FIELDS:
            raise AttributeError(name)
        return getattr(_record_at(self._facts, self._depth, self._tick)[0], name)

    def plain_record(self, memo: dict) -> NodeRecord:
        """The tree as plain records, built here without the shared cache (records/held.py
        packs it; the cache is the app's, and another thread may be using it). `memo`: the
        trees built for the other firings of one packing, shared with them."""
        return _record_at(self._facts, self._depth, self._tick, memo)[0]

    def names(self) -> list[str]:
        """Every node name in the tree, without building it (visible.py checks them)."""
        out: list[str] = []
        stack = [(self._facts, self._depth)]
        while stack:
            facts, depth = stack.pop()
            out.append(facts.name)
            if depth > 0 and facts.children:
                stack.extend((child, depth - 1) for child in facts.children if child is not None)
        return out


_NODE_FIELDS = frozenset(("name", "seq_nr", "next", "saved", "truncated"))


def _record_at(facts: _Facts, depth: int, tick: int, memo: dict | None = None) -> tuple[NodeRecord, int]:
    """The record of `facts` `depth` levels deep as it was at `tick`, and the tick of the
    latest reading it depends on (records built lately are shared by that key). `memo`: a
    dict to build into instead of the shared cache (_BUILT), whose keys' facts the caller
    keeps alive (records/held.py packs on another thread than the one reading the cache)."""
    if memo is not None:
        at_tick = (id(facts), depth, tick, None)  # the firings of one tick share whole trees
        known = memo.get(at_tick)
        if known is not None:
            return known
    seen, saved = facts.saved_at(tick)
    children: list[NodeRecord | None] = []
    if depth > 0:
        for child in facts.children or ():
            if child is None:
                children.append(None)
                continue
            record, child_seen = _record_at(child, depth - 1, tick, memo)
            children.append(record)
            if child_seen > seen:
                seen = child_seen
        truncated = facts.n_next > BREADTH
    else:
        truncated = facts.n_next > 0
    key = (id(facts), depth, seen)
    if memo is not None:
        record = memo.get(key)
        if record is None:
            record = memo[key] = NodeRecord(name=facts.name, seq_nr=facts.seq_nr, next=children, saved=saved, truncated=truncated)
        known = memo[at_tick] = (record, seen)
        return known
    built = _BUILT.get(key)
    if built is None or built[0] is not facts:
        if len(_BUILT) >= _BUILT_MAX:
            del _BUILT[next(iter(_BUILT))]  # the oldest
        record = NodeRecord(name=facts.name, seq_nr=facts.seq_nr, next=children, saved=saved, truncated=truncated)
        _BUILT[key] = built = (facts, record)  # facts: keeps its id from being recycled meanwhile
    return built[1], seen


# Records built lately, by (id of the facts, depth, tick of the latest reading they depend on):
# the firings around one (the app's neighbours, a node's subtree) share them.
_BUILT: dict[tuple[int, int, int], tuple[_Facts, NodeRecord]] = {}
_BUILT_MAX = 4096


def forget_built_records() -> None:
    """Let go of the records built lately: a finished run's firings were packed (records/held.py),
    and what the packing built would otherwise stay among the run's freed memory."""
    _BUILT.clear()


class _State:
    """What one run knows of its nodes (a new one when the run ends: it holds nodes)."""

    def __init__(self) -> None:
        self.facts: dict[int, _Facts] = {}
        # Nodes with facts that started running and whose saved tensors were not yet
        # seen freed: read again at every firing.
        self.volatile: dict[int, object] = {}
        # Nodes that started in the backwards under way (facts made later begin volatile).
        self.started: dict[int, object] = {}
        self.tick = 0
        # Backwards in progress that capture/tracer.py noticed (those outside them are read eagerly).
        self.noticed = 0
        # (id(facts), depth) -> the latest lazy record: reused by firings at the same tick.
        self.lazy: dict[tuple[int, int], LazyNodeRecord] = {}


_state = _State()


def forget_node_records() -> None:
    """A run ended: let go of its nodes (records not yet read keep the facts they need)."""
    global _state
    old, _state = _state, _State()
    for facts in old.facts.values():
        facts.node = None


def backward_started() -> None:
    """A backward that hooktui noticed starts (capture/tracer.py puts `node_started` on its nodes)."""
    _state.noticed += 1


def backward_ended() -> None:
    state = _state
    _reread(state)  # what the last nodes freed
    state.noticed = max(0, state.noticed - 1)
    if state.noticed == 0:  # nothing runs any more: nothing can change
        state.volatile.clear()
        state.started.clear()


def node_started(node) -> None:
    """`node` is about to run in a backward that frees the graph: its saved tensors may
    be released from now on."""
    if _saved_slots(node):
        state = _state
        state.started[id(node)] = node
        if id(node) in state.facts:
            state.volatile[id(node)] = node


def describe_node(node, depth: int = 3) -> NodeRecord | None:
    """A record of `node` with its next_functions `depth` levels deep, as reading every
    node now would give; built when first read."""
    return described(node, depth)[1]


def described(node, depth: int = 3) -> tuple[str | None, NodeRecord | None]:
    """(node_name(node), describe_node(node, depth)): what a firing records of its node,
    looking through the wrappers once."""
    node = real_node(node)
    if node is None:
        return None, None
    state = _state
    if state.volatile:
        _reread(state)
    eager = state.noticed == 0 and torch._C._current_graph_task_id() != -1
    facts = _facts_of(state, node)
    _cover(state, facts, depth, eager)
    key = (id(facts), depth)
    record = state.lazy.get(key)
    if record is None or record._tick != state.tick or record._facts is not facts:
        record = LazyNodeRecord.__new__(LazyNodeRecord)
        record._facts, record._depth, record._tick = facts, depth, state.tick
        state.lazy[key] = record
    return facts.name, record


def _facts_of(state: _State, node) -> _Facts:
    facts = state.facts.get(id(node))
    if facts is None or facts.node is not node:
        facts = state.facts[id(node)] = _Facts(node)
        if id(node) in state.started and not _is_final(facts.saved):
            state.volatile[id(node)] = node
    return facts


def _cover(state: _State, facts: _Facts, depth: int, eager: bool) -> None:
    """Make sure the facts of every node `depth` levels below `facts` exist (read now)."""
    if eager:
        _read_again(state, facts)
    elif facts.reach >= depth:
        return
    if depth > 0:
        if facts.children is None:
            facts.children = tuple(None if n is None else _facts_of(state, n) for n, _ in facts.node.next_functions[:BREADTH])
        for child in facts.children:
            if child is not None:
                _cover(state, child, depth - 1, eager)
    facts.reach = max(facts.reach, depth)


def _reread(state: _State) -> None:
    """Read the volatile nodes again; keep what changed; forget those now final."""
    for nid, node in list(state.volatile.items()):
        facts = state.facts.get(nid)
        if facts is None or facts.node is not node:
            del state.volatile[nid]
            continue
        if _still_held(node, facts.last_saved()):
            continue  # nothing changed, and a node holding a tensor is not final
        if _is_final(_read_again(state, facts)):
            del state.volatile[nid]


def _read_again(state: _State, facts: _Facts) -> dict:
    last = facts.last_saved()
    saved = _read_saved(facts.node, last)
    if saved is not last:
        state.tick += 1
        if facts.changes is None:
            facts.changes = []
        facts.changes.append((state.tick, saved))
    return saved


def _still_held(node, last: dict) -> bool:
    """Whether nothing changed since the reading `last`, from one look at one slot. A
    node's saved tensors are released together (release_variables, once it has run):
    while one that held a tensor at the last reading still holds it, all do."""
    for key, _attr, raw_attr in _saved_slots(node):
        if type(last.get(key)) is list:
            try:
                raw = getattr(node, raw_attr)
            except RuntimeError:
                return False
            return isinstance(getattr(raw, "data", None), torch.Tensor)
    return False


def _is_final(saved: dict) -> bool:
    """No saved tensor of the node is left (freed, or never defined): nothing about it
    can change now."""
    return all(value == FREED for value in saved.values())


# One dict per distinct set of saved shapes ({"mat1": [32, 64], "mat2": [64, 64]} recurs
# in every layer of a stack): records share them, and never modify them.
_SAVED: dict[tuple, dict] = {}
_SAVED_MAX = 1 << 14


def _interned(saved: dict) -> dict:
    key = tuple([(k, tuple(v) if type(v) is list else v) for k, v in saved.items()])
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
    if _saved_slots(node):
        saved = _saved_shapes(node, before)
    elif name_of(node) == ACCUMULATE:
        saved = {}
    else:
        return _NO_SAVED
    if name_of(node) == ACCUMULATE:
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
