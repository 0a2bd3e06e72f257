"""Which forward op each node built by a `create_graph=True` backward belongs to.

With create_graph, running a node's backward builds new nodes (second-order gradients:
MAML's inner step, PINN residuals, gradient penalties) that read the tensors the forward op
saved. PyTorch's full hooks hand a module wrapped inputs, so a tensor an op saved inside
the module is the module's *wrapped* input: a node built from it later sends its gradient
through the module's input wrapper, into grad_input. An op after the call saved the
*returned* (wrapped) tensor: a node built from it sends its gradient through the output
wrapper, into grad_output. hooktui's node hooks see the real tensors only, so each such
node is attributed to the forward node whose backward built it, and counted where PyTorch
would count it.

Which node built which is read by identity, not by sequence number (nodes built in a
backward are numbered by the thread that runs it, on CUDA the engine's own): after a node
ran (its post-hook), the gradients it returned have as grad_fn the nodes it built, and
below them only nodes of the graph or nodes built earlier in the pass.
"""

from __future__ import annotations

from typing import Any

import torch

from .nodes import seq_of


class GradOrigins:
    def __init__(self) -> None:
        # id(node) -> (the node, kept so that its id stays its own; sequence number of
        # the forward node whose backward built it).
        self._built: dict[int, tuple[Any, int]] = {}

    def node_ran(self, node, grad_inputs, graph: set[int]) -> None:
        """`node` (of `graph`, the ids of the nodes the running create_graph backward
        started from) has run and returned `grad_inputs`: the nodes they come from, down
        to the graph, were built by it."""
        origin = self.origin(node)
        frontier = [g.grad_fn for g in grad_inputs if isinstance(g, torch.Tensor) and g.grad_fn is not None]
        built = self._built
        while frontier:
            new = frontier.pop()
            if id(new) in graph or id(new) in built:
                continue
            built[id(new)] = (new, origin)
            frontier.extend(nxt for nxt, _ in new.next_functions if nxt is not None)

    def origin(self, node) -> int:
        """The sequence number of the forward node `node` stands for: its own, or for a
        node a create_graph backward built, that of the forward node it came from."""
        entry = self._built.get(id(node))
        return seq_of(node) if entry is None else entry[1]

    def clear(self) -> None:
        self._built.clear()
