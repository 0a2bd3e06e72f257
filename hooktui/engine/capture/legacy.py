"""`legacy_backward` firings: what `module.register_backward_hook` (deprecated) would get.

PyTorch registers a legacy hook on the grad_fn of the module's first output tensor, i.e.
the module's *last* autograd node, and passes that node's input gradients as grad_input.
We hook the very same node (hooktui does not wrap outputs, so it is the node PyTorch would
use) and name what each of its inputs is.

A run that does not record them (`hooktui.guard`, a recorded `hooktui.debug`) still
counts them: the hook takes the firing's number and builds nothing, so every other firing
has the number it has where legacy firings are recorded (engine/records/firing.py).
"""

from __future__ import annotations

import sys

import torch

from ..autograd.node_inputs import label_next_functions
from ..autograd.nodes import name_of
from ..records.records import frozen_notes
from .host import LegacyHost
from .naming import indexed


class LegacyHooks:
    def __init__(self, tracer: LegacyHost, record: bool = True) -> None:
        self.tracer = tracer
        self.record = record
        # The hook of a firing counted only: one bound method for every call (it lives as
        # long as the autograd graph: a closure a call would cost ~0.2 KB each).
        self._count = self._counted

    def watch(self, call, outputs: list[tuple[str, torch.Tensor]]) -> None:
        first = outputs[0][1] if outputs else None
        if first is None or first.grad_fn is None:
            return
        node = first.grad_fn
        if not self.record:  # counted only: its number is taken, nothing is built
            self.tracer.node_hooks.add(node, True, self._count)
            return
        labels = tuple(label_next_functions(node, self.tracer.param_names, _input_edge_names(call)))
        self.tracer.node_hooks.add(node, True, _LegacyFiring(self, call, node, labels))

    def _counted(self, _grad_inputs, _grad_outputs) -> None:
        self.tracer.next_index("legacy_backward")

    def _fire(self, call, node, labels: tuple[str, ...], grad_inputs, grad_outputs) -> None:
        tracer = self.tracer
        # The tensor arguments' shapes, read from the call's metadata as it fires (the hook
        # holds the call anyway: no tuple of its own kept a call for this).
        input_shapes = tuple(meta.shape for meta in call.inputs if meta is not None)
        tensors, live = [], {}
        for k, grad in enumerate(grad_inputs):
            name = indexed("grad_input", k)
            label = labels[k] if k < len(labels) else "?"
            tensors.append(tracer.describe(name, grad, target=label) if grad is not None else tracer.missing(name, "None from the node", target=label))
            live[name] = grad
        for k, grad in enumerate(grad_outputs):
            name = indexed("grad_output", k)
            target = sys.intern(f"output {k} of {name_of(node)}")
            tensors.append(tracer.describe(name, grad, target=target) if grad is not None else tracer.missing(name, "None", target=target))
            live[name] = grad
        shapes = [None if g is None else list(g.shape) for g in grad_inputs]
        node_name = name_of(node)
        if shapes == [list(shape) for shape in input_shapes]:
            verdict = f"legacy grad_input matches the module's inputs here: its last op ({node_name}) takes exactly the module's inputs"
        else:
            verdict = (
                f"legacy grad_input ≠ module inputs: the hook sits on the module's last op ({node_name}), so its "
                f"grad_input holds that op's input gradients {_shapes(shapes)}, not the gradients w.r.t. the module's "
                f"inputs {_shapes(input_shapes)}; parameter gradients are only there if that op uses a parameter"
            )
        # Shared: the same few verdicts repeat on every call of a module (one string and one
        # list of notes each, not one per firing: ~0.4 KB per legacy firing held otherwise).
        tracer.fire_call(call, "legacy_backward", tensors, live, node=node, notes=_verdict_notes(verdict))


class _LegacyFiring:
    """The legacy hook of one call, on its output's node (a slotted callable: it lives as
    long as the autograd graph, a closure would cost several times its size)."""

    __slots__ = ("hooks", "call", "node", "labels")

    def __init__(self, hooks: LegacyHooks, call, node, labels: tuple[str, ...]) -> None:
        self.hooks, self.call, self.node, self.labels = hooks, call, node, labels

    def __call__(self, grad_inputs, grad_outputs) -> None:
        self.hooks._fire(self.call, self.node, self.labels, grad_inputs, grad_outputs)


_VERDICTS: dict[str, list[str]] = {}


def _verdict_notes(verdict: str) -> list[str]:
    """One shared, unfillable list of notes per verdict (as NO_NOTES is: a reader that adds a
    note builds a new list)."""
    notes = _VERDICTS.get(verdict)
    if notes is None:
        if len(_VERDICTS) >= 4096:
            _VERDICTS.clear()
        notes = _VERDICTS[verdict] = frozen_notes([sys.intern(verdict)])
    return notes


def _shapes(shapes: list[list[int] | None]) -> str:
    return "[" + ", ".join("None" if s is None else "(" + ", ".join(map(str, s)) + ("," if len(s) == 1 else "") + ")" for s in shapes) + "]"


def _input_edge_names(call) -> dict[tuple[int, int], str]:
    return {(id(node), nr): f"args[{i}]" for i, (node, nr) in call.input_edges.items()}

