"""Autograd node hooks as hooktui uses them.

`NodeHooks` puts at most one PyTorch hook on each (node, pre|post) and dispatches to any
number of watchers in a fixed order; `GradWatch` gathers the gradients of one module
call that arrive at several nodes.

These live as long as the autograd graph (a node keeps its hooks until it is freed), so
on a model of many small modules they are most of what a run holds besides its records
(`hooktui trace` without `--save` holds nothing else per firing). Each is kept small: one
slotted `_NodeHook` per (node, side) (keyed by the node, one dict a side), its watchers
a tuple, what removes it kept instead of PyTorch's handle, hooktui's containment applied
where it dispatches (not a closure per watcher), and a `GradWatch` reached through one
small `_Arrival` per node it watches, which holds that node's entries.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import torch

# Shared by every GradWatch: each holds it for a few list operations, never while calling out.
_WATCH_LOCK = threading.Lock()


class GradWatch:
    """Gathers gradients that arrive at several autograd nodes during one backward and
    calls `done(about, grads, nodes)` once every watched node that will run has run (the
    same rule as `torch.autograd.graph.register_multi_grad_hook(mode="all")`, but bound to
    nodes, which in-place ops cannot move).

    A module call has one or two, made as the backward starts and alive until it fires:
    `done` is one callable for every watch (not a closure each), `about` what it is told,
    the gradients' list is made when the first one arrives, and each watched (node, side)
    is one `_Arrival` holding its own entries (a watch watches a few: found by a scan)."""

    __slots__ = ("grads", "_n_slots", "_done", "_about", "_hooks", "_expected", "_seen", "_finished", "_arrivals",
                 "__weakref__")

    def __init__(self, n_slots: int, done: Callable[[Any, list, list], None], about: Any, hooks: NodeHooks) -> None:
        # The gradients by slot (None until one arrives: `_slots()` makes the list).
        self.grads: list[torch.Tensor | None] | None = None
        self._n_slots = n_slots
        self._done = done
        self._about = about
        self._hooks = hooks
        self._expected: int | None = None
        self._seen = 0
        self._finished = False
        # One per watched (node, side), in the order they were first watched.
        self._arrivals: tuple[_Arrival, ...] = ()

    def watch(self, node, slot: int, position: int, *, grad_inputs: bool = False, output_side: bool = False) -> None:
        """Slot `slot` gets `grad_outputs[position]` of `node` (its pre-hook), or
        `grad_inputs[position]` (its post-hook) when `grad_inputs` is true. `output_side`:
        this watch gathers some call's grad_output (see NodeHooks for the order)."""
        for arrival in self._arrivals:
            if arrival.node is node and arrival.post == grad_inputs:
                arrival.entries += (_pair(slot, position),)
                return
        arrival = _Arrival(self, node, grad_inputs, (_pair(slot, position),))
        self._arrivals += (arrival,)
        self._hooks.add(node, grad_inputs, arrival, output_side=output_side)

    def _slots(self) -> list:
        grads = self.grads
        if grads is None:
            grads = self.grads = [None] * self._n_slots
        return grads

    def preset(self, slot: int, grad) -> None:
        """Slot `slot` starts from `grad`, known before the backward runs (a root's seed)."""
        grads = self._slots()
        grads[slot] = grad if grads[slot] is None else grads[slot] + grad

    @property
    def nodes(self) -> list:
        return [arrival.node for arrival in self._arrivals]

    def close(self) -> None:
        """Its backward has ended: a watched node that did not run there (a retained graph
        run again later) must not complete this watch in a later backward."""
        with _WATCH_LOCK:
            self._finished = True
            self.grads = []
            self._done = self._about = None

    def _arrive(self, arrival: _Arrival, grads) -> None:
        with _WATCH_LOCK:
            if self._finished:
                return  # a later backward over the same nodes has watches of its own
            if self._expected is None:
                # The running node counts itself: PyTorch says False for the node the
                # backward starts from (the loss's grad_fn), which does run.
                self._expected = sum(a is arrival or torch._C._will_engine_execute_node(a.node) for a in self._arrivals)
            gathered = self._slots()
            for slot, position in arrival.entries:
                grad = grads[position]
                if grad is None:
                    continue
                if gathered[slot] is not None:
                    grad = gathered[slot] + grad  # several consumers of one input
                gathered[slot] = grad
            self._seen += 1
            finished = self._finished = self._seen == self._expected
            done, about = self._done, self._about
            if finished:
                # The hooks holding this watch live as long as the graph: let the
                # gradients and the firing's callback go with the firing, as the engine
                # lets the gradients go (a backward would otherwise keep every module's
                # gradients, and each call's state, to its end).
                self.grads = []
                self._done = self._about = None
        if finished:
            done(about, gathered, self.nodes)


# (slot, position) of a watch's entry: one tuple each for the small ones every watch uses.
_PAIRS = tuple(tuple((slot, position) for position in range(8)) for slot in range(8))


def _pair(slot: int, position: int) -> tuple[int, int]:
    if slot < 8 and position < 8:
        return _PAIRS[slot][position]
    return (slot, position)


class _Arrival:
    """What a node hook calls for one GradWatch watching one (node, side): `entries`, the
    (slot, position) pairs the gradients arriving there go to."""

    __slots__ = ("watch", "node", "post", "entries")

    def __init__(self, watch: GradWatch, node, post: bool, entries: tuple[tuple[int, int], ...]) -> None:
        self.watch, self.node, self.post, self.entries = watch, node, post, entries

    def __call__(self, grads, *_outputs) -> None:
        self.watch._arrive(self, grads)


class _NodeHook:
    """The one PyTorch hook hooktui puts on one side of one node. Pre-hook watchers get
    (grad_outputs,); post-hook watchers (grad_inputs, grad_outputs). `first` / `last`
    (tuples: a new one when a watcher comes) are called in that order; then `on_run(node)` (a pre-hook:
    the node is about to run), one callable shared by every node of a backward."""

    __slots__ = ("node", "first", "last", "on_run", "contain", "hooks_ref", "hook_id")

    def __init__(self, node, contain) -> None:
        self.node = node
        self.first: tuple[Callable, ...] = ()
        self.last: tuple[Callable, ...] = ()
        self.on_run: Callable | tuple | None = None
        self.contain = contain
        # What takes it off the node again (`NodeHooks.remove`): a weak reference to the
        # node's dict of hooks and its key there (None: its handle is in `handles`).
        self.hooks_ref: Any = None
        self.hook_id: int = 0

    def hold(self, handle) -> bool:
        """Keep what removing `handle`'s hook needs, not the handle: a RemovableHandle is an
        object and its __dict__ (~0.1 KB), held as long as the graph, a few a module call.
        False for a handle that does more than delete its key from one dict."""
        ref, hook_id = getattr(handle, "hooks_dict_ref", None), getattr(handle, "id", None)
        if ref is None or type(hook_id) is not int or getattr(handle, "extra_dict_ref", ()):
            return False
        self.hooks_ref, self.hook_id = ref, hook_id
        return True

    def remove(self) -> None:
        """As RemovableHandle.remove."""
        hooks = None if self.hooks_ref is None else self.hooks_ref()
        if hooks is not None and self.hook_id in hooks:
            del hooks[self.hook_id]

    def __call__(self, *grads) -> None:
        first, last, on_run = self.first, self.last, self.on_run
        for callbacks in (first, last):
            if callbacks:
                for callback in callbacks:  # a tuple: one added meanwhile waits for the next run
                    self._run("its autograd node hook", callback, *grads)
        if on_run is not None:
            for callback in on_run if type(on_run) is tuple else (on_run,):
                self._run("its autograd node pre-hook", callback, self.node)

    def _run(self, where: str, callback: Callable, *args) -> None:
        contain = self.contain
        if contain is None:
            callback(*args)
            return
        try:
            callback(*args)
        except Exception as exc:  # as Containment.hook: hooktui's own failure, noted, never raised into torch
            if contain.passes(exc):
                raise
            contain.failed(where, exc)


class NodeHooks:
    """One PyTorch hook per (node, pre|post), dispatching to our watchers.

    The order gives PyTorch's nesting. On one node, grad_input watchers (the node is
    inside the calls whose input it consumes) run before grad_output watchers (the node
    consumes those calls' outputs from outside): a call's backward comes before the
    backward_pre of the call that produced its input. A wrapper registers after its
    child (a Sequential's input feeds its first child, its output is its last child's
    output): grad_input watchers run oldest first, grad_output watchers newest first.
    A pre-hook's `on_run` callbacks (the tracer's "this node is about to run") come after
    every watcher of that node."""

    def __init__(self, contain=None) -> None:
        # node -> its hook, one dict per side (no (node, side) key tuple a hook).
        self._pre: dict[Any, _NodeHook] = {}
        self._post: dict[Any, _NodeHook] = {}
        # Handles of hooks put on nodes besides these (and of any of these whose handle
        # `_NodeHook.hold` could not take apart).
        self.handles: list = []
        # The tracer's Containment (contain.py): a watcher that fails never reaches autograd.
        self._contain = contain

    def has(self, node, post: bool) -> bool:
        return node in (self._post if post else self._pre)

    def _hook(self, node, post: bool) -> _NodeHook:
        hooks = self._post if post else self._pre
        hook = hooks.get(node)
        if hook is None:
            hook = hooks[node] = _NodeHook(node, self._contain)
            handle = node.register_hook(hook) if post else node.register_prehook(hook)
            if not hook.hold(handle):
                self.handles.append(handle)
        return hook

    def add(self, node, post: bool, callback: Callable, output_side: bool = False) -> None:
        hook = self._hook(node, post)
        if output_side or not post:
            hook.last = (callback, *hook.last)
        else:
            hook.first = (*hook.first, callback)

    def on_run(self, node, callback: Callable) -> None:
        """`callback(node)` when `node` is about to run (its pre-hook), after its watchers.
        The same callback given twice for one node runs once."""
        hook = self._hook(node, False)
        current = hook.on_run
        if current is None:
            hook.on_run = callback
        elif current != callback and (type(current) is not tuple or callback not in current):
            hook.on_run = (*(current if type(current) is tuple else (current,)), callback)

    def remove(self) -> None:
        for hooks in (self._pre, self._post):
            for hook in hooks.values():
                hook.remove()
            hooks.clear()
        for handle in self.handles:
            handle.remove()
        self.handles.clear()
