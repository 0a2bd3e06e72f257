"""Hunting a non-finite value: what the tracer adds while a non-finite breakpoint is set.

Module firings say which call first saw a NaN or an Inf; two finer facts say where in
that call it was born, and both must be taken while it happens:

- the line of the user's forward code that created each autograd node. A torch function
  mode notes it in the node's `metadata` (the dict anomaly mode uses for its traceback)
  as each op returns, for ops whose result has a grad_fn. Only the frame walk is paid,
  not a traceback per op as with `torch.autograd.detect_anomaly()`.
- the first autograd node whose computed gradients are not finite while the gradients it
  received were. Every node of each backward's graph gets a post-hook that checks what it
  computed; the first offender is emitted as a `node` firing of the innermost module call
  that created it (before that call's own backward firing), with its creation line.

Nothing of this changes what the model computes; the node hooks are removed with the rest.
"""

from __future__ import annotations

import math
import os
import sys
from typing import Any, NamedTuple

import torch
from torch.overrides import TorchFunctionMode

from ..autograd.node_inputs import label_next_functions
from ..autograd.nodes import name_of, seq_of
from ..records.records import SourceLocation
from ..summaries import sharded
from .host import HuntHost
from .source import _location

_LINE_KEY = "hooktui.line"
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_HOOKTUI_DIR = os.path.dirname(os.path.dirname(os.path.dirname(__file__))) + os.sep  # hooktui/
_STDLIB_DIR = os.path.dirname(os.__file__) + os.sep


def user_frame() -> SourceLocation | None:
    """The innermost frame outside torch and hooktui; None when there is none before the
    standard library (an op of hooktui's own default loss, run from its thread)."""
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.startswith(_STDLIB_DIR) and "site-packages" not in filename:
            return None
        if not filename.startswith(_TORCH_DIR) and not filename.startswith(_HOOKTUI_DIR) and not filename.startswith("<"):
            return _location(filename, frame.f_lineno, frame.f_code.co_name)
        frame = frame.f_back
    return None


class CreationLines(TorchFunctionMode):
    """Notes in each new autograd node the user line whose op created it."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        node = _grad_fn(out)
        if node is not None:
            metadata = node.metadata
            if _LINE_KEY not in metadata:
                metadata[_LINE_KEY] = user_frame()
        return out


def _grad_fn(out: Any):
    if isinstance(out, torch.Tensor):
        return out.grad_fn
    if isinstance(out, (tuple, list)) and out and isinstance(out[0], torch.Tensor):
        return out[0].grad_fn
    return None


def short(line: SourceLocation) -> str:
    """`file.py:30: code`, the file's name only (the whole path is the firing's source)."""
    return f"{os.path.basename(line.filename)}:{line.lineno}: {line.line}".rstrip(": ")


def creation_line(node) -> SourceLocation | None:
    if node is None:
        return None
    try:
        return node.metadata.get(_LINE_KEY)
    except (AttributeError, RuntimeError):
        return None


def has_nonfinite(t: torch.Tensor | None) -> bool:
    """Whether `t` holds a NaN or an Inf (a DTensor: this rank's part, with no collective)."""
    t = sharded.local(t) if t is not None else None
    if t is None or not (t.is_floating_point() or t.is_complex()) or t.numel() == 0:
        return False
    total = t.sum()
    if total.is_complex():
        total = total.abs()
    if math.isfinite(total.item()):
        return False  # a finite sum proves there is no NaN and no Inf
    return not bool(torch.isfinite(t).all())  # or finite values whose sum overflowed


class NodeCandidate(NamedTuple):
    """A node's gradients, summarised while a deferred hunt runs (`Tracer.defer_hunt`):
    whether it is where a value went bad is decided once the counts are read."""

    position: int  # the index its firing takes if it is the one
    node: Any
    line: SourceLocation | None
    call: Any  # the innermost module call that created it, or None
    tensors: list  # records: grad_outputs first, then grad_inputs
    received: int  # how many of them are grad_outputs


class NodeWatch:
    """Post-hooks on every node of a backward's graph; the first node that turns finite
    gradients into non-finite ones becomes a `node` firing. Deferred (no value read while
    the step runs): every node's gradients are summarised on their device and kept as a
    candidate; `first_born` picks the node at the step's end."""

    def __init__(self, tracer: HuntHost) -> None:
        self.tracer = tracer
        self.found = False
        self.candidates: list[NodeCandidate] = []

    def watch(self, graph: list) -> None:
        if self.found:
            return
        handles = self.tracer.node_hooks.handles
        contained = self.tracer.contain.hook
        for node in graph:
            if node.next_functions:  # a leaf's AccumulateGrad computes nothing to check
                check = contained(lambda gi, go, n=node: self._check(n, gi, go), "its non-finite watch on an autograd node")
                handles.append(node.register_hook(check))

    def _check(self, node, grad_inputs, grad_outputs) -> None:
        if self.tracer.defer_hunt:
            self._keep(node, grad_inputs, grad_outputs)
            return
        if self.found or not any(has_nonfinite(g) for g in grad_inputs):
            return
        if any(has_nonfinite(g) for g in grad_outputs):
            return  # it arrived non-finite: born upstream (a tensor hook, the seed)
        self.found = True
        self.tracer.fire_born_node(node, grad_inputs, grad_outputs, creation_line(node))

    def _keep(self, node, grad_inputs, grad_outputs) -> None:
        tracer = self.tracer
        call = innermost_call(tracer.calls, node)
        tensors, _ = node_tensors(tracer, node, grad_inputs, grad_outputs, call_edges(call))
        self.candidates.append(NodeCandidate(tracer.next_free_index, node, creation_line(node), call, tensors, len(grad_outputs)))

    def first_born(self) -> NodeCandidate | None:
        """The first candidate whose computed gradients hold NaN or Inf while those it
        received do not (their counts read already: lazy_stats.read_counts)."""
        for found in self.candidates:
            received, computed = found.tensors[: found.received], found.tensors[found.received :]
            if any(_counted_bad(t) for t in computed) and not any(_counted_bad(t) for t in received):
                return found
        return None


def _counted_bad(record) -> bool:
    counts = None if record.is_missing else record.nonfinite_counts
    return bool(counts and any(counts))


def call_edges(call) -> dict:
    return {} if call is None else {(id(n), nr): f"args[{i}]" for i, (n, nr) in call.input_edges.items()}


def node_tensors(tracer: HuntHost, node, grad_inputs, grad_outputs, edges: dict) -> tuple[list, dict]:
    """Records of what a node received (grad_outputs) and computed (grad_inputs)."""
    labels = label_next_functions(node, tracer.param_names, edges)
    tensors, live = [], {}
    for prefix, grads, targets in (
        ("grad_outputs", grad_outputs, [f"output {k} of {name_of(node)}" for k in range(len(grad_outputs))]),
        ("grad_inputs", grad_inputs, labels),
    ):
        for k, grad in enumerate(grads):
            name = f"{prefix}[{k}]"
            target = targets[k] if k < len(targets) else "?"
            tensors.append(tracer.describe(name, grad, target=target) if grad is not None else tracer.missing(name, "None", target=target))
            live[name] = grad
    return tensors, live


def innermost_call(calls: list, node):
    """The innermost module call whose forward created `node` (largest start that holds it)."""
    seq = seq_of(node)
    best = None
    for call in calls:
        if call.seq_start <= seq < call.seq_end and (best is None or call.seq_start >= best.seq_start):
            best = call
    return best
