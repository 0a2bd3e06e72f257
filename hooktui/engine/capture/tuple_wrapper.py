"""What PyTorch's one hook wrapper for a module's whole output tuple does, for tracer.py
to mirror with hooks on the nodes that made each element.

PyTorch's full backward hooks route every tensor of a tuple output through one
`BackwardHookFunction` node. That node runs (backward_pre fires) once every element's uses
have run, passes None on for an element the backward does not reach, and, being one node,
joins every element's path: a backward asked for some inputs only (`inputs=`) runs the
path of an element that leads to none of them when another element's does. These helpers
answer, per backward, which element gradients are taken where (`early_slots`, `seed_grads`),
which calls a backward stops before (`inner_returns_of_inputs`), and which paths it skips
(`skipped_path`).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import torch

from ..autograd import nodes
from .call_outputs import OutputSlot


UNNEEDED_ELEMENT = (
    "None here, where PyTorch's hook has a gradient: this backward was asked for some inputs only "
    "(backward(inputs=...), autograd.grad) and the path from the loss to this element leads to none of them, "
    "so autograd skips it; PyTorch's hook wraps the whole tuple in one node, which every element's path "
    "then leads to, so with its hooks installed that path runs (hooktui runs nothing extra)")


def skipped_path(slot: OutputSlot, seen: set[int]) -> bool:
    """Whether the running backward skips the node that made this (tuple element's) tensor
    while it is in the backward's graph (`seen`): `inputs=` asked for others."""
    return slot.edge is not None and id(slot.edge[0]) in seen and not will_run(slot.edge[0])


def seed_grads(seeds: list) -> dict[tuple[int, int], Any]:
    """(id(node), output_nr) of each root needing grad -> the gradient the backward starts
    it from: as given, or ones for a one-element root given none (torch.autograd's rule)."""
    found: dict[tuple[int, int], Any] = {}
    for root, grad in seeds:
        if not root.requires_grad or root.grad_fn is None:
            continue
        if grad is None:
            if root.numel() != 1:
                continue  # PyTorch raises
            grad = torch.ones_like(root)
        key = (id(root.grad_fn), root.output_nr)
        found[key] = grad if key not in found else found[key] + grad
    return found


def reach(start: list, stop: set[int]) -> set[int]:
    """ids of the nodes reachable from `start` (themselves included) not passing through `stop`."""
    region: set[int] = set()
    frontier = list(start)
    while frontier:
        node = frontier.pop()
        if node is None or id(node) in stop or id(node) in region:
            continue
        region.add(id(node))
        frontier.extend(nxt for nxt, _ in node.next_functions if nxt is not None)
    return region


def early_slots(slots: tuple[OutputSlot, ...], seen: set[int], skipped: tuple[int, ...]) -> set[int]:
    """Slots of a tuple output whose gradient is taken from the uses after the call (their
    post-hooks) rather than at the node that made them.

    PyTorch's output wrapper is one node for the whole tuple: it runs, and backward_pre
    fires, as soon as every element's uses have run. Elements made by different nodes
    (two heads, `return self.head_a(x), self.head_b(x)`) would otherwise be complete only
    when the *oldest* of those nodes runs, after the whole backward of the newer ones (and
    the firings of the calls inside that made them). The newest node runs right after the
    last use, when the wrapper would: its slot stays at its pre-hook (after the caller's
    tensor hooks), as does an element the caller put a hook on that is still alive."""
    made_by = {id(s.edge[0]): s.edge[0] for k, s in enumerate(slots)
               if s.edge is not None and not s.extra and id(s.edge[0]) in seen and k not in skipped}
    if len(made_by) < 2:
        return set()
    newest = max(made_by.values(), key=nodes.seq_of)
    return {k for k, s in enumerate(slots) if s.edge is not None and not s.extra and id(s.edge[0]) in made_by
            and s.edge[0] is not newest and not s.caller_hooked()}


def inner_returns_of_inputs(calls: list, inputs: list[torch.Tensor], seen: set[int]) -> dict[int, tuple[int, ...]]:
    """`backward(inputs=[h])` with `h` a module's output: the engine runs `h`'s own node
    (its hooks see the gradient, which it adds to `h.grad`) and nothing past it. With
    PyTorch's hooks, `h`'s node is the wrapper of the outermost call that returned `h`:
    only that call's backward_pre fires, not those of the calls inside it that returned
    the same tensor (their wrappers lie past it). Those calls' slots, by id(call): none
    where `h`'s node also leads to another input (then everything past it runs)."""
    wanted: dict[tuple[int, int], Any] = {}
    for tensor in inputs:
        if tensor.requires_grad and tensor.grad_fn is not None:
            wanted[(id(tensor.grad_fn), tensor.output_nr)] = tensor.grad_fn
    skipped: dict[int, list[int]] = defaultdict(list)
    for key, node in wanted.items():
        if id(node) not in seen or _leads_to(node, {k for k in wanted if k[0] != key[0]}):
            continue
        returned = [(call, k) for call in calls for k, slot in enumerate(call.slots)
                    if slot.edge is not None and not slot.extra and (id(slot.edge[0]), slot.edge[1]) == key]
        if len(returned) < 2:
            continue
        outermost = max(call.out_key for call, _ in returned)
        for call, k in returned:
            if call.out_key != outermost:
                skipped[id(call)].append(k)
    return {key: tuple(ks) for key, ks in skipped.items()}


def _leads_to(node, edges: set[tuple[int, int]]) -> bool:
    """Whether a path from `node` (past it) reaches one of `edges` ((id(node), output_nr))."""
    if not edges:
        return False
    targets = {node_id for node_id, _ in edges}
    stack, visited = [node], {id(node)}
    while stack:
        for nxt, _nr in stack.pop().next_functions:
            if nxt is None or id(nxt) in visited:
                continue
            if id(nxt) in targets:
                return True
            visited.add(id(nxt))
            stack.append(nxt)
    return False


def will_run(node) -> bool:
    """Whether the running backward will execute `node` (or capture its gradient)."""
    try:
        return torch._C._will_engine_execute_node(node)
    except RuntimeError:  # asked outside a backward: cannot tell
        return True
