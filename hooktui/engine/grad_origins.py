"""Which forward op each node built by a `create_graph=True` backward belongs to.

With create_graph, running a node's backward builds new nodes (second-order gradients:
MAML's inner step, PINN residuals, gradient penalties) that read the tensors the forward op
saved. PyTorch's full hooks hand a module wrapped inputs, so a tensor an op saved inside
the module is the module's *wrapped* input: a node built from it later sends its gradient
through the module's input wrapper, into grad_input. An op after the call saved the
*returned* (wrapped) tensor: a node built from it sends its gradient through the output
wrapper, into grad_output. hooktui's node hooks see the real tensors only, so each such
node is attributed to the forward node whose backward was running when it was created
(sequence numbers: a per-thread counter, read on the thread that runs the backward,
which on CPU is the caller's), and counted where PyTorch would count it.
"""

from __future__ import annotations

import bisect

import torch

from .nodes import seq_of


def _counter() -> int:
    return torch._C._autograd._get_sequence_nr()


class GradOrigins:
    def __init__(self) -> None:
        # (first sequence number, end, index into _starts) of each create_graph backward.
        self._passes: list[tuple[int, int, int]] = []
        # Ascending: the counter when a node began running in one of those backwards...
        self._starts: list[int] = []
        # ...and that node's own sequence number.
        self._nodes: list[int] = []
        self._open: list[tuple[int, int]] = []  # (first sequence number, index): under way

    def begin(self) -> None:
        self._open.append((_counter(), len(self._starts)))

    def end(self) -> None:
        start, first = self._open.pop()
        self._passes.append((start, _counter(), first))

    def node_starts(self, node) -> None:
        """`node` is about to run in the open create_graph backward (a pre-hook)."""
        self._starts.append(_counter())
        self._nodes.append(seq_of(node))

    def made_by_double_backward(self, seq: int) -> bool:
        return self._pass_of(seq) is not None

    def origin(self, seq: int) -> int | None:
        """The sequence number of the forward node whose backward built the node numbered
        `seq`; None for a node no create_graph backward built (or one built before any
        node ran, which no saved tensor can explain)."""
        for _ in range(64):  # a node built by the backward of a node built by a backward...
            first = self._pass_of(seq)
            if first is None:
                return seq
            i = bisect.bisect_right(self._starts, seq) - 1
            if i < first:
                return None
            seq = self._nodes[i]
        return None

    def _pass_of(self, seq: int) -> int | None:
        for start, first in reversed(self._open):
            if seq >= start:
                return first
        for start, end, first in self._passes:
            if start <= seq < end:
                return first
        return None
