"""Autograd node hooks as hooktui uses them.

`NodeHooks` puts at most one PyTorch hook on each (node, pre|post) and dispatches to any
number of watchers in a fixed order; `GradWatch` gathers the gradients of one module
call that arrive at several nodes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import torch


class GradWatch:
    """Gathers gradients that arrive at several autograd nodes during one backward and
    calls `done(grads, nodes)` once every watched node that will run has run (the same
    rule as `torch.autograd.graph.register_multi_grad_hook(mode="all")`, but bound to
    nodes, which in-place ops cannot move)."""

    def __init__(self, n_slots: int, done: Callable[[list, list], None], hooks: NodeHooks) -> None:
        self.grads: list[torch.Tensor | None] = [None] * n_slots
        self._done = done
        self._hooks = hooks
        self._expected: int | None = None
        self._seen = 0
        self._finished = False
        self._lock = threading.Lock()
        # (node, watching grad_inputs?) -> [(slot, position)]
        self._by_node: dict[tuple[Any, bool], list[tuple[int, int]]] = {}

    def watch(self, node, slot: int, position: int, *, grad_inputs: bool = False, output_side: bool = False) -> None:
        """Slot `slot` gets `grad_outputs[position]` of `node` (its pre-hook), or
        `grad_inputs[position]` (its post-hook) when `grad_inputs` is true. `output_side`:
        this watch gathers some call's grad_output (see _NodeHooks for the order)."""
        key = (node, grad_inputs)
        if key not in self._by_node:
            self._by_node[key] = []
            self._hooks.add(node, grad_inputs, lambda grads, *_outputs, k=key: self._arrive(k, grads), output_side=output_side)
        self._by_node[key].append((slot, position))

    def preset(self, slot: int, grad) -> None:
        """Slot `slot` starts from `grad`, known before the backward runs (a root's seed)."""
        self.grads[slot] = grad if self.grads[slot] is None else self.grads[slot] + grad

    @property
    def nodes(self) -> list:
        return [node for node, _ in self._by_node]

    def close(self) -> None:
        """Its backward has ended: a watched node that did not run there (a retained graph
        run again later) must not complete this watch in a later backward."""
        with self._lock:
            self._finished = True
            self.grads = []

    def _arrive(self, key, grads) -> None:
        with self._lock:
            entries = self._by_node.get(key)
            if not entries or self._finished:
                return  # a later backward over the same nodes has watches of its own
            if self._expected is None:
                # The running node counts itself: PyTorch says False for the node the
                # backward starts from (the loss's grad_fn), which does run.
                self._expected = sum(k == key or torch._C._will_engine_execute_node(k[0]) for k in self._by_node)
            for slot, position in entries:
                grad = grads[position]
                if grad is None:
                    continue
                if self.grads[slot] is not None:
                    grad = self.grads[slot] + grad  # several consumers of one input
                self.grads[slot] = grad
            self._seen += 1
            finished = self._finished = self._seen == self._expected
            grads = self.grads
            if finished:
                # The hooks holding this watch live as long as the graph: let the
                # gradients go with the firing, as the engine lets them go (a backward
                # would otherwise keep every module's gradients to its end).
                self.grads = []
        if finished:
            self._done(grads, self.nodes)


class NodeHooks:
    """One PyTorch hook per (node, pre|post), dispatching to our watchers.

    The order gives PyTorch's nesting. On one node, grad_input watchers (the node is
    inside the calls whose input it consumes) run before grad_output watchers (the node
    consumes those calls' outputs from outside): a call's backward comes before the
    backward_pre of the call that produced its input. A wrapper registers after its
    child (a Sequential's input feeds its first child, its output is its last child's
    output): grad_input watchers run oldest first, grad_output watchers newest first."""

    def __init__(self, contain=None) -> None:
        self._watchers: dict[tuple[Any, bool], tuple[list[Callable], list[Callable]]] = {}
        self.handles: list = []
        # The tracer's Containment (contain.py): a watcher that fails never reaches autograd.
        self._contain = contain

    def has(self, node, post: bool) -> bool:
        return (node, post) in self._watchers

    def add(self, node, post: bool, callback: Callable, output_side: bool = False) -> None:
        key = (node, post)
        if self._contain is not None:
            callback = self._contain.hook(callback, "its autograd node hook")
        if key not in self._watchers:
            watchers: tuple[list[Callable], list[Callable]] = ([], [])
            self._watchers[key] = watchers
            if post:
                self.handles.append(node.register_hook(lambda grad_inputs, grad_outputs, w=watchers: _dispatch(w, grad_inputs, grad_outputs)))
            else:
                self.handles.append(node.register_prehook(lambda grad_outputs, w=watchers: _dispatch(w, grad_outputs)))
        inputs_side, outputs_side = self._watchers[key]
        if output_side or not post:
            outputs_side.insert(0, callback)
        else:
            inputs_side.append(callback)

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles.clear()
        self._watchers.clear()


def _dispatch(watchers: tuple[list[Callable], list[Callable]], *grads) -> None:
    """Pre-hook watchers get (grad_outputs,); post-hook watchers (grad_inputs, grad_outputs)."""
    for callback in list(watchers[0]) + list(watchers[1]):
        callback(*grads)
