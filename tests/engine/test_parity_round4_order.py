"""Backward firings of tuple outputs and partial backwards, against PyTorch's own hooks.

PyTorch's full backward hooks wrap a module's whole output tuple in one node. That node
runs (and backward_pre fires) once every element's uses have run, and it passes `None` on
for an element the backward does not reach. hooktui hooks the nodes that made each element
instead; these tests check that its firings still come in PyTorch's order and number, with
PyTorch's values, for models of the shapes where they did not (issue 31, items 1-3). The
expectations come from PyTorch's hooks on an identical twin (plain_hooks.py), never from
hooktui.
"""

from __future__ import annotations

import torch
from torch import nn

import hooktui
from plain_hooks import assert_record_matches, assert_step_same_as_pytorch, plain_firings

X = torch.randn(4, 3, generator=torch.Generator().manual_seed(1))


class TwoHeads(nn.Module):
    """Returns one tuple whose elements come from two children; head_b is deeper and
    takes an input that needs grad, so its backward has zeros to pass on when it gets None."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(3, 3)
        self.head_a = nn.Linear(3, 2)
        self.head_b = nn.Sequential(nn.Linear(3, 3), nn.Tanh(), nn.Linear(3, 2))

    def forward(self, x):
        h = self.stem(x)
        return self.head_a(h), self.head_b(h)


def two_heads() -> nn.Module:
    torch.manual_seed(0)
    return TwoHeads()


def uneven_loss(a, b):
    """a and b reach the loss by paths of different length."""
    return a.pow(2).sum() + b.sin().sum()


# 1. A tuple's elements reached by paths of different length ------------------------------


def test_the_tuples_backward_pre_fires_before_the_children_that_made_its_elements():
    def step(model):
        return uneven_loss(*model(X))

    events = assert_step_same_as_pytorch(two_heads, step)
    order = [(e.hook, e.module) for e in events if e.hook.startswith("backward")]
    # What the comparison above checks, said plainly: the root's pair before head_b's.
    assert order.index(("backward_pre", "")) < order.index(("backward_pre", "head_b"))


def test_two_roots_with_their_own_gradients_fire_in_pytorchs_order():
    def step(model):
        a, b = model(X)
        torch.autograd.backward([a, b], [torch.full_like(a, 0.5), torch.full_like(b, 2.0)], retain_graph=True)
        return uneven_loss(a, b)

    assert_step_same_as_pytorch(two_heads, step)


def test_autograd_grad_of_every_parameter_before_the_step():
    def step(model):
        a, b = model(X)
        torch.autograd.grad(uneven_loss(a, b), list(model.parameters()), retain_graph=True)
        return uneven_loss(a, b)

    assert_step_same_as_pytorch(two_heads, step)


def test_backward_asked_for_one_heads_parameters_shows_none_for_the_other_element_labelled():
    """PyTorch's one wrapper node for the whole tuple makes head_a's path (pow, sum) lead
    to head_b's parameters, so with its hooks installed that path runs and the root's
    grad_output[0] has a value. Without them autograd skips it; hooktui runs nothing
    extra, so it shows None there, saying why. Everything else matches."""
    def step(model):
        a, b = model(X)
        uneven_loss(a, b).backward(inputs=list(model.head_b.parameters()), retain_graph=True)
        return uneven_loss(a, b)

    def unlike(_position, record):
        return record.missing is not None and record.missing.startswith("None here, where PyTorch's hook has a gradient")

    events = assert_step_same_as_pytorch(two_heads, step, unlike=unlike)
    assert sum(unlike(0, t) for e in events for t in e.tensors) == 1  # the root's grad_output[0], once


class AttentionBlock(nn.Module):
    """Returns (feed-forward output, per-head attention weights): the weights come from
    inside MultiheadAttention (made before the feed-forward ran)."""

    def __init__(self) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(4, 2, add_bias_kv=True, add_zero_attn=True, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(4, 4), nn.GELU(), nn.Linear(4, 4))

    def forward(self, x):
        out, weights = self.attn(x, x, x, average_attn_weights=False)
        return self.ff(out), weights


def test_multihead_attention_with_per_head_weights_in_the_loss():
    def build():
        torch.manual_seed(0)
        return AttentionBlock()

    q = torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(2))

    def step(model):
        out, weights = model(q)
        return out.pow(2).sum() + (weights * torch.arange(weights.numel()).reshape(weights.shape)).sum()

    assert_step_same_as_pytorch(build, step)


# 2. A tuple element that gets no gradient -------------------------------------------------


def test_backward_from_one_element_fires_the_calls_that_made_the_other_with_none_then_zeros():
    def step(model):
        a, b = model(X)
        a.sum().backward(retain_graph=True)
        return uneven_loss(a, b)

    events = assert_step_same_as_pytorch(two_heads, step)
    first = events[: next(i for i, e in enumerate(events) if e.hook == "backward_pre" and e.module == "head_a")]
    pre_b = next(e for e in first if e.hook == "backward_pre" and e.module == "head_b")
    assert pre_b.tensors[0].shape is None  # None, as PyTorch's hook gets
    assert any("passes None on" in n for n in pre_b.notes)


def test_autograd_grad_of_one_element_fires_them_too():
    def step(model):
        a, b = model(X)
        torch.autograd.grad(a.sum(), list(model.parameters()), retain_graph=True, allow_unused=True)
        return uneven_loss(a, b)

    assert_step_same_as_pytorch(two_heads, step)


# 3. backward(inputs=[h]) with h a module's output -----------------------------------------


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Linear(3, 3)

    def forward(self, x):
        return self.inner(x)  # the block returns its child's output as is


class KeepsH(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pre = nn.Linear(3, 3)
        self.block = Block()
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        self.h = self.block(self.pre(x))
        return self.fc(self.h)


def keeps_h() -> nn.Module:
    torch.manual_seed(0)
    return KeepsH()


def test_backward_to_a_modules_output_fires_only_the_outer_calls_backward_pre():
    def step(model):
        out = model(X)
        out.sum().backward(inputs=[model.h], retain_graph=True)
        return out.pow(2).sum()

    events = assert_step_same_as_pytorch(keeps_h, step)
    # The step's own backward: up to the root's backward_pre of the main one.
    first = events[: [i for i, e in enumerate(events) if e.hook == "backward_pre" and e.module == ""][1]]
    assert ("backward_pre", "block") in [(e.hook, e.module) for e in first]
    assert ("backward_pre", "block.inner") not in [(e.hook, e.module) for e in first]


def test_autograd_grad_to_a_modules_output_leaves_nothing_for_the_next_backward():
    def step(model):
        out = model(X)
        torch.autograd.grad(out.sum(), [model.h], retain_graph=True)
        return out.pow(2).sum()

    assert_step_same_as_pytorch(keeps_h, step)


# Where hooktui keeps PyTorch's value and not its order ------------------------------------


def test_an_element_the_caller_hooked_keeps_the_hooks_value_and_fires_later():
    """The caller hooks `a` (made first) and holds it: hooktui reads `a`'s gradient at its
    node, after the hook (PyTorch's value), so the root's backward_pre comes after head_b's
    firings, where PyTorch's comes before them (README: Tuple outputs and partial backwards)."""
    def step(model):
        a, b = model(X)
        a.register_hook(lambda g: g * 3)
        step.held = a  # still alive when backward starts
        return uneven_loss(a, b)

    expected, _ = plain_firings(two_heads(), step=step)
    model = two_heads()
    trace = hooktui.record(model, None, step=lambda: step(model))
    step.held = None
    events = [e for e in trace.events if e.hook.startswith("backward")]
    plain = [f for f in expected if f.hook.startswith("backward")]
    assert sorted((e.hook, e.module) for e in events) == sorted((f.hook, f.module) for f in plain)
    for event in events:
        firing = next(f for f in plain if (f.hook, f.module) == (event.hook, event.module))
        for record, tensor in zip(event.tensors, firing.tensors):
            assert_record_matches(record, tensor)  # grad_output[0] after the hook: 3x
    order = [(e.hook, e.module) for e in events]
    plain_order = [(f.hook, f.module) for f in plain]
    assert plain_order.index(("backward_pre", "")) < plain_order.index(("backward_pre", "head_b"))
    assert order.index(("backward_pre", "")) > order.index(("backward_pre", "head_b"))
