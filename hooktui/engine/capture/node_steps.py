"""Stepping into a module's backward: `node_pre` / `node` firings for each autograd node
that executes for one module call.

Asked for while paused in the call's backward_pre firing (the worker is inside the
pre-hook of the call's output node): every node created during the call (its sequence
number lies between the call's pre- and post-hook) gets a pre- and post-hook. The output
node's own pre-hook is the backward_pre firing itself, so it only gets the post-hook.

These firings exist only because the user asked for them, so they take sub-numbers
(Event.sub: 39.1, 39.2 after plain firing #39), never a number of the plain sequence: every
other firing keeps the number it has in `hooktui trace` and in a run nobody stepped into.
"""

from __future__ import annotations

import torch

from ..autograd.node_inputs import label_next_functions
from ..autograd.nodes import in_seq_range, name_of
from .host import FiresCalls


class NodeSteps:
    def __init__(self, tracer: FiresCalls) -> None:
        self.tracer = tracer

    def expand(self, call) -> int:
        """Hook the call's nodes; returns how many were hooked."""
        nodes = call_nodes(call)
        edges = {(id(node), nr): f"args[{i}]" for i, (node, nr) in call.input_edges.items()}
        # The node whose pre-hooks are running right now cannot take a new pre-hook (PyTorch
        # is iterating over them); its arrival is the backward_pre firing we are paused in.
        running = torch._C._current_autograd_node()
        hooks = self.tracer.node_hooks
        for node in nodes:
            labels = label_next_functions(node, self.tracer.param_names, edges)
            if node is not running or hooks.has(node, False):
                hooks.add(node, False, lambda go, n=node: self._fire(call, n, "node_pre", None, go, None))
            hooks.add(node, True, lambda gi, go, n=node, l=labels: self._fire(call, n, "node", gi, go, l))
        return len(nodes)

    def _fire(self, call, node, hook: str, grad_inputs, grad_outputs, labels) -> None:
        """node_pre shows the gradients arriving at the node (w.r.t. its outputs); node
        shows what it computed (w.r.t. each of its inputs, named by `labels`)."""
        tracer = self.tracer
        if hook == "node_pre":
            prefix, grads = "grad_outputs", grad_outputs
            targets = [f"output {k} of {name_of(node)}" for k in range(len(grads))]
        else:
            prefix, grads = "grad_inputs", grad_inputs
            targets = [labels[k] if k < len(labels) else "?" for k in range(len(grads))]
        tensors, live = [], {}
        for k, (grad, target) in enumerate(zip(grads, targets)):
            name = f"{prefix}[{k}]"
            tensors.append(tracer.describe(name, grad, target=target) if grad is not None else tracer.missing(name, "None", target=target))
            live[name] = grad
        tracer.fire_call(call, hook, tensors, live, node=node)  # N.k: firing.py


def call_nodes(call) -> list:
    """The autograd nodes created during `call`, reachable from its outputs, in the order
    a depth-first walk from the outputs meets them."""
    start, end = call.seq_start, call.seq_end
    found, seen = [], set()
    frontier = [node for _, node, _ in call.output_edges if in_seq_range(node, start, end)]
    while frontier:
        node = frontier.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        found.append(node)
        frontier.extend(nxt for nxt, _ in node.next_functions if nxt is not None and in_seq_range(nxt, start, end))
    return found
