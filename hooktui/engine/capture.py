"""Hooks on every module: forward pre/post firings, and full-backward-hook firings
captured without PyTorch's `register_full_backward_hook`.

Why not the real full backward hooks: they route a module's inputs and outputs through
`BackwardHookFunction`, whose outputs are views that raise on any in-place op
(`nn.ReLU(inplace=True)`, `x += y`), so they break real models. Here nothing the model
sees is replaced; per module call we hook existing autograd nodes instead:

- grad_output: the gradient each output gets from outside the call, as PyTorch's
  wrapper sees it. When backward starts (`before_backward`), the graph is walked from
  the loss to find, for each output's gradient edge (taken in the forward hook), the
  nodes created after the call that consume it (an in-place op on the output is one of
  them); a post-hook on each gives its share. Hooking the producing node instead would
  also count consumers inside the module (an output it also feeds to a later layer)
  and fire only after them. An output that is the loss itself gets its grad from the
  loss node's pre-hook.
- grad_input: the nodes created during the call (their sequence numbers fall between the
  pre- and post-hook) that consume a positional input (an edge to the input's gradient
  edge, taken before the call). A post-hook on each gives exactly this call's share of
  that input's gradient; an in-place op on the input inside the module is just another
  consumer node.

When: PyTorch's hooks run inside the wrapper nodes, whose place in the autograd engine's
queue is their sequence number: the output wrapper is created as the call ends, the input
wrapper as it starts. A firing whose gradients are complete waits ("armed") until a node
created before its wrapper would is about to run (a pre-hook on every node of the graph),
or backward ends; the armed firings then go in the order the engine would run the
wrappers (newest first).

Like PyTorch's full hooks: a call whose positional inputs need no grad fires its backward
firing early, right after backward_pre, with no input grads; a call whose outputs need no
grad fires no backward at all; a tensor input that does not require grad beside one that
does gets zeros. Unlike them, dict/list/dataclass outputs are captured too.
"""

from __future__ import annotations

import itertools
import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from torch.autograd.graph import get_gradient_edge

from . import nodes, stats
from .legacy import LegacyHooks
from .naming import call_tensors, named_tensors
from .node_hooks import GradWatch, NodeHooks
from .node_steps import NodeSteps
from .param_grads import ParamGradHooks
from .records import Event, SourceLocation, TensorRecord
from .source import caller_location, definition_location


@dataclass
class LiveFiring:
    """The live objects of the firing the worker is paused in."""

    event: Event
    module: nn.Module | None
    tensors: dict[str, torch.Tensor | None]
    node: Any = None  # torch.autograd.graph.Node
    call: Any = None  # the engine's record of the module call (opaque to callers)


@dataclass
class _Call:
    """One call of one module, from its forward pre-hook to its last backward firing."""

    module: nn.Module
    name: str
    type: str
    index: int
    source: SourceLocation | None
    n_args: int
    # Positional tensor inputs: arg index -> tensor (what the caller passed).
    inputs: dict[int, torch.Tensor] = field(default_factory=dict)
    # Inputs that require grad: arg index -> their gradient edge (node, output_nr) before the call.
    input_edges: dict[int, tuple[Any, int]] = field(default_factory=dict)
    seq_start: int = 0
    seq_end: int = 0
    # Outputs that need grad: (output slot, gradient edge node, output_nr), taken in the forward hook.
    output_edges: list[tuple[int, Any, int]] = field(default_factory=list)
    forward_index: int | None = None
    output_names: list[str] = field(default_factory=list)
    output_node: Any = None
    output_requires_grad: list[bool] = field(default_factory=list)
    input_watch: GradWatch | None = None
    has_input_grad: bool = False
    # Inputs returned unchanged: arg index -> output slot.
    passthrough: dict[int, int] = field(default_factory=dict)
    # The same tensor passed again: arg index -> index of its first occurrence.
    duplicates: dict[int, int] = field(default_factory=dict)
    # Set once backward_pre has fired; grad_input waits for it (and reads passthrough grads from it).
    grad_outputs: list | None = None
    pending_inputs: tuple | None = None
    # Where PyTorch's input / output wrapper node would sit in the engine's queue:
    # (sequence number when it would be created, creation order).
    in_key: tuple[int, int] = (0, 0)
    out_key: tuple[int, int] = (0, 0)


Emit = Callable[[Event, LiveFiring], None]


class Tracer:
    """Installs the hooks on every module of `model`, turns firings into Events, removes
    every hook it added on `remove()`."""

    def __init__(
        self,
        model: nn.Module,
        emit: Emit,
        options: stats.StatsOptions = stats.StatsOptions(),
        *,
        legacy: bool = False,
        param_grads: bool = True,
    ) -> None:
        self.model = model
        self.emit = emit
        self.options = options
        self.phase = "forward"
        self._names = {id(m): name for name, m in model.named_modules()}
        self._modules = {name: m for name, m in model.named_modules()}
        self.param_names = {id(p): name for name, p in model.named_parameters()}
        self._legacy = LegacyHooks(self) if legacy else None
        self._param_grads = ParamGradHooks(self) if param_grads else None
        self._node_steps = NodeSteps(self)
        self._handles: list = []
        self._node_hooks = NodeHooks()
        self._stacks: dict[int, list[_Call]] = defaultdict(list)
        # Calls whose grad_output watch is placed when backward starts.
        self._awaiting_backward: list[_Call] = []
        # Firings whose gradients are complete, waiting for their turn: (key, fire).
        self._armed: list[tuple[tuple[int, int], Callable[[], None]]] = []
        self._tick = itertools.count()
        self._counts: dict[str, int] = defaultdict(int)
        # (module, type, call, source) of the forward call an exception was raised in.
        self.failed_call: tuple[str, str, int, SourceLocation | None] | None = None
        # Module name -> index of its latest forward firing (param_grad firings link to it).
        self._last_forward: dict[str, int] = {}
        self._next_index = 0

    # -- install / remove --------------------------------------------------------
    def install(self) -> None:
        for _, module in self.model.named_modules():
            self._handles.append(module.register_forward_pre_hook(self._pre_hook, with_kwargs=True))
            self._handles.append(module.register_forward_hook(self._post_hook, with_kwargs=True, always_call=True))
        if self._param_grads is not None:
            self._param_grads.install(self.model)

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        if self._param_grads is not None:
            self._param_grads.remove()
        self._node_hooks.remove()
        self._stacks.clear()
        self._awaiting_backward.clear()
        self._armed.clear()

    def next_index(self) -> int:
        index = self._next_index
        self._next_index += 1
        return index

    # -- forward -----------------------------------------------------------------
    def _pre_hook(self, module: nn.Module, args: tuple, kwargs: dict):
        name = self._names[id(module)]
        call = _Call(
            module=module,
            name=name,
            type=type(module).__name__,
            index=self._counts[name],
            source=caller_location() or definition_location(type(module)),
            n_args=len(args),
            inputs={i: a for i, a in enumerate(args) if isinstance(a, torch.Tensor)},
        )
        self._counts[name] += 1
        self._stacks[id(module)].append(call)

        tensors = call_tensors(args, kwargs)
        self._fire(call, "forward_pre", [self._describe(n, t) for n, t in tensors], dict(tensors), node=None)

        if torch.is_grad_enabled():
            call.seq_start = torch._C._autograd._get_sequence_nr()
            call.in_key = (call.seq_start, next(self._tick))
            for i, arg in call.inputs.items():
                if arg.requires_grad:
                    edge = get_gradient_edge(arg)
                    first = next((j for j, e in call.input_edges.items() if e[0] is edge.node and e[1] == edge.output_nr), None)
                    if first is not None:
                        # Node hooks cannot tell the uses of one tensor apart: its whole
                        # gradient through this call goes to the first occurrence.
                        call.duplicates[i] = first
                        continue
                    call.input_edges[i] = (edge.node, edge.output_nr)
        return None

    def _post_hook(self, module: nn.Module, args: tuple, kwargs: dict, output: Any):
        stack = self._stacks.get(id(module))
        if not stack:
            return None
        call = stack.pop()
        if sys.exc_info()[1] is not None:
            # Called by always_call because forward raised. The exception reaches the
            # innermost call first: that is the call it was raised in.
            if self.failed_call is None:
                self.failed_call = (call.name, call.type, call.index, call.source)
            return None

        outputs = list(named_tensors(output, "output"))
        call.output_names = [n for n, _ in outputs]
        first_node = next((t.grad_fn for _, t in outputs if t.grad_fn is not None), None)
        call.output_node = first_node
        tensors = call_tensors(args, kwargs) + outputs
        call.forward_index = self._fire(
            call, "forward", [self._describe(n, t) for n, t in tensors], dict(tensors), node=first_node
        )
        self._last_forward[call.name] = call.forward_index
        if torch.is_grad_enabled() and self._watch_outputs(call, outputs):
            self._watch_inputs(call, outputs)
            if self._legacy is not None:
                self._legacy.watch(call, outputs)
        return None

    def _watch_outputs(self, call: _Call, outputs: list[tuple[str, torch.Tensor]]) -> bool:
        """Note each output's gradient edge for before_backward(); False when no output
        needs grad (then, like a full backward hook, the call has no backward firing)."""
        with_grad = [(j, t) for j, (_, t) in enumerate(outputs) if t.requires_grad and t.grad_fn is not None]
        if not with_grad:
            return False
        call.seq_end = torch._C._autograd._get_sequence_nr()
        call.out_key = (call.seq_end, next(self._tick))
        for j, tensor in with_grad:
            edge = get_gradient_edge(tensor)
            call.output_edges.append((j, edge.node, edge.output_nr))
        call.output_requires_grad = [t.requires_grad for _, t in outputs]
        self._awaiting_backward.append(call)
        return True

    def before_backward(self, loss: torch.Tensor) -> None:
        """Place the grad_output watches: for each output edge of each call, the nodes
        created after the call (outside it) that consume it, found by walking the graph
        from the loss. Outputs that nothing reachable consumes get no gradient."""
        root = get_gradient_edge(loss)
        consumers: dict[tuple[int, int], list[tuple[Any, int]]] = defaultdict(list)
        seen, frontier = {id(root.node)}, [root.node]
        graph = [root.node]
        while frontier:
            node = frontier.pop()
            for position, (nxt, nr) in enumerate(node.next_functions):
                if nxt is None:
                    continue
                consumers[(id(nxt), nr)].append((node, position))
                if id(nxt) not in seen:
                    seen.add(id(nxt))
                    frontier.append(nxt)
                    graph.append(nxt)
        for call in self._awaiting_backward:
            watch = GradWatch(len(call.output_names), lambda grads, ns, c=call: self._on_grad_output(c, grads, ns), self._node_hooks)
            for slot, node, nr in call.output_edges:
                if node is root.node and nr == root.output_nr:
                    watch.watch(node, slot, nr)  # the output is the loss: its grad is the seed
                for consumer, position in consumers.get((id(node), nr), []):
                    if _seq(consumer) >= call.seq_end:
                        watch.watch(consumer, slot, position, grad_inputs=True, output_side=True)
        self._awaiting_backward.clear()
        for node in graph:
            self._node_hooks.handles.append(node.register_prehook(lambda _grads, n=node: self._release(_seq(n))))

    def after_backward(self) -> None:
        """Backward is over: fire what is still armed (the root's input wrapper runs last)."""
        self._release(None)

    def _arm(self, key: tuple[int, int], fire: Callable[[], None]) -> None:
        self._armed.append((key, fire))

    def _release(self, seq: int | None) -> None:
        """A node with sequence number `seq` is about to run: every armed wrapper created
        after it (key above `seq`) would have run first, newest first."""
        while True:
            ready = [entry for entry in self._armed if seq is None or entry[0][0] > seq]
            if not ready:
                return
            entry = max(ready, key=lambda e: e[0])
            self._armed.remove(entry)
            entry[1]()

    def _watch_inputs(self, call: _Call, outputs: list[tuple[str, torch.Tensor]]) -> None:
        """Watch grad_input through the nodes of this call that consume each input."""
        if not call.input_edges:
            return  # fires early, from _on_grad_output
        seq_end = torch._C._autograd._get_sequence_nr()
        consumers = _consumers(call.input_edges, [t.grad_fn for _, t in outputs if t.grad_fn is not None], call.seq_start, seq_end)
        watch = GradWatch(call.n_args, lambda grads, ns, c=call: self._on_grad_input(c, grads, ns), self._node_hooks)
        for node, position, slot in consumers:
            watch.watch(node, slot, position, grad_inputs=True)
        # An input returned unchanged (nn.Identity) has no consumer inside the call: its
        # gradient is the matching grad_output.
        passthrough = {i for i in call.input_edges if not any(slot == i for _, _, slot in consumers)}
        for i in passthrough:
            edge = call.input_edges[i]
            for j, (_, tensor) in enumerate(outputs):
                if tensor.grad_fn is edge[0] and tensor.output_nr == edge[1]:
                    call.passthrough[i] = j
        call.input_watch = watch if consumers else None
        call.has_input_grad = True

    # -- backward ----------------------------------------------------------------
    def _on_grad_output(self, call: _Call, grads: list, watched_nodes: list) -> None:
        grads = list(grads)
        self._arm(call.out_key, lambda: self._fire_grad_output(call, grads))

    def _fire_grad_output(self, call: _Call, grads: list) -> None:
        tensors, live = [], {}
        flags = call.output_requires_grad
        for j, (out_name, grad) in enumerate(zip(call.output_names, grads)):
            name = f"grad_output[{j}]"
            if grad is not None:
                tensors.append(self._describe(name, grad, target=out_name))
            elif j < len(flags) and not flags[j]:
                tensors.append(stats.missing(name, "this output does not require grad", target=out_name))
            else:
                tensors.append(stats.missing(name, "no gradient reached this output (the loss does not depend on it)", target=out_name))
            live[name] = grad
        self._fire(call, "backward_pre", tensors, live, node=call.output_node)
        call.grad_outputs = list(grads)
        if call.input_watch is None:
            if call.has_input_grad and not call.passthrough:
                # Inputs need grad but nothing in this call reaches them: PyTorch's full
                # backward hook never fires then (its input node never runs).
                return
            if not call.has_input_grad:
                # No input needs grad: PyTorch fires early, from the output wrapper.
                self._fire_grad_input(call, [None] * call.n_args, [], early=True)
            else:
                # Every input passed straight through to an output.
                self._on_grad_input(call, [None] * call.n_args, [])
        elif call.pending_inputs is not None:
            pending, call.pending_inputs = call.pending_inputs, None
            self._on_grad_input(call, *pending)

    def _on_grad_input(self, call: _Call, grads: list, watched_nodes: list) -> None:
        if call.grad_outputs is None:
            # The inputs' nodes ran before the last output node: fire after backward_pre.
            call.pending_inputs = (list(grads), list(watched_nodes))
            return
        grads, watched_nodes = list(grads), list(watched_nodes)
        self._arm(call.in_key, lambda: self._fire_grad_input(call, grads, watched_nodes))

    def _fire_grad_input(self, call: _Call, grads: list, watched_nodes: list, early: bool = False) -> None:
        grads = list(grads)
        for i, j in call.passthrough.items():
            if i < len(grads) and grads[i] is None:
                grads[i] = call.grad_outputs[j]
        tensors, live = [], {}
        any_grad = bool(call.input_edges)
        for i in range(call.n_args):
            name, target = f"grad_input[{i}]", f"args[{i}]"
            original = call.inputs.get(i)
            grad = grads[i] if i < len(grads) else None
            if original is None:
                tensors.append(stats.missing(name, "not a tensor argument", target=target))
            elif i in call.duplicates:
                first = call.duplicates[i]
                tensors.append(
                    stats.missing(
                        name,
                        f"same tensor as args[{first}]: its gradient through this call, from all its uses, is in grad_input[{first}] "
                        "(PyTorch's full backward hook splits it per argument)",
                        target=target,
                    )
                )
                grad = None
            elif grad is not None:
                tensors.append(self._describe(name, grad, target=target))
            elif any_grad:
                # PyTorch's full backward hook passes zeros here (of the input's dtype), not None.
                why = "this input does not require grad" if not original.requires_grad else "no gradient flowed to this input through this call"
                grad = torch.zeros((), dtype=original.dtype, device=original.device).expand(original.shape)
                tensors.append(self._describe(name, grad, target=target, note=f"zeros: {why} (PyTorch's full backward hook passes zeros)"))
            else:
                tensors.append(stats.missing(name, "this input does not require grad", target=target))
            live[name] = grad
        notes = []
        if early:
            notes.append(
                "fired early, right after backward_pre and before the backward of this module's children: "
                "none of its positional inputs requires grad (PyTorch's full backward hook does the same)"
            )
        node = watched_nodes[0] if watched_nodes else call.output_node
        self._fire(call, "backward", tensors, live, node=node, notes=notes)

    # -- for the finer firing kinds (param_grads.py, legacy.py, node_steps.py) -------------
    @property
    def node_hooks(self) -> NodeHooks:
        return self._node_hooks

    def last_forward_index(self, module_name: str) -> int | None:
        return self._last_forward.get(module_name)

    def call_count(self, module_name: str) -> int:
        return self._counts.get(module_name, 0)

    def module_named(self, module_name: str) -> nn.Module:
        return self._modules[module_name]

    def step_into(self, call: _Call) -> int:
        """Hook the autograd nodes of `call` so each one fires (node_pre / node)."""
        return self._node_steps.expand(call) if call is not None and call.output_edges else 0

    def describe(self, name: str, tensor: torch.Tensor, **extra) -> TensorRecord:
        return stats.describe(name, tensor, self.options, **extra)

    def missing(self, name: str, reason: str, **extra) -> TensorRecord:
        return stats.missing(name, reason, **extra)

    def fire_call(self, call: _Call, hook: str, tensors: list[TensorRecord], live: dict, node, notes: list[str] | None = None) -> int:
        """Emit one firing of `call`; returns its index."""
        return self.fire_event(
            hook=hook,
            module=call.module,
            call=call.index,
            tensors=tensors,
            live=live,
            node=node,
            source=call.source,
            forward_index=None if hook in ("forward_pre", "forward") else call.forward_index,
            notes=notes,
            call_state=call,
        )

    def fire_event(self, *, hook: str, module: nn.Module, call: int, tensors: list[TensorRecord], live: dict, node,
                   source=None, forward_index: int | None = None, notes: list[str] | None = None, call_state=None) -> int:
        event = Event(
            index=self.next_index(),
            phase=self.phase,
            hook=hook,
            module=self._names.get(id(module), ""),
            module_type=type(module).__name__,
            call=call,
            grad_fn=nodes.node_name(node),
            tensors=tensors,
            source=source,
            node=nodes.describe_node(node),
            forward_index=forward_index,
            notes=notes or [],
        )
        self.emit(event, LiveFiring(event=event, module=module, tensors=live, node=node, call=call_state))
        return event.index

    # -- events ------------------------------------------------------------------
    def _describe(self, name: str, tensor: torch.Tensor, **extra) -> TensorRecord:
        return self.describe(name, tensor, **extra)

    def _fire(self, call: _Call, hook: str, tensors: list[TensorRecord], live: dict, node, notes: list[str] | None = None) -> int:
        return self.fire_call(call, hook, tensors, live, node, notes)


def _consumers(input_edges: dict[int, tuple[Any, int]], output_nodes: list, seq_start: int, seq_end: int):
    """(node, input position, arg index) for each node created in [seq_start, seq_end)
    whose next_functions reach an input's gradient edge. Walks back from the outputs
    through the call's own nodes only."""
    wanted = {(id(node), nr): i for i, (node, nr) in input_edges.items()}
    found, seen = [], set()
    frontier = [n for n in output_nodes if _in_range(n, seq_start, seq_end)]
    while frontier:
        node = frontier.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for position, (nxt, nr) in enumerate(node.next_functions):
            if nxt is None:
                continue
            slot = wanted.get((id(nxt), nr))
            if slot is not None:
                found.append((node, position, slot))
            elif _in_range(nxt, seq_start, seq_end):
                frontier.append(nxt)
    return found


_in_range = nodes.in_seq_range
_seq = nodes.seq_of
