"""Node records are cached, shared and re-read only when a node can have changed
(engine/autograd/nodes.py). At every firing they must still equal what reading every node right
then gives: a backward frees a node's saved tensors after it ran, and the record of a
later firing must say "freed" for exactly those.

The reference below reads nodes directly (dir(), `_saved_*`), at the firing, with no cache.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

import hooktui
from hooktui.engine.autograd import nodes
from hooktui.engine.records.records import NodeRecord
from plain_hooks import load_sample

_NO_SEQ = 2**64 - 1


def eager_record(node, depth: int = 3, breadth: int = 6) -> NodeRecord | None:
    """Read `node` and its next_functions now, every field, nothing cached."""
    while node is not None and node.name() == "BackwardHookFunctionBackward":
        node = next((n for n, _ in node.next_functions if n is not None), None)
    if node is None:
        return None
    return _eager(node, depth, breadth)


def _eager(node, depth: int, breadth: int) -> NodeRecord:
    names = set(dir(node))
    saved: dict = {}
    for attr in sorted(names):
        if not attr.startswith("_saved_") or attr.startswith("_saved_raw") or "_raw" + attr not in names:
            continue
        key = attr[len("_saved_"):]
        try:
            raw = getattr(node, "_raw" + attr)
            raws = raw if isinstance(raw, (tuple, list)) else [raw]
            if any(getattr(r, "unpack_hook", None) is not None for r in raws):
                saved[key] = "packed by a saved-tensor hook"
                continue
        except RuntimeError:
            pass
        try:
            value = getattr(node, attr)
        except RuntimeError:
            saved[key] = "freed"
            continue
        if isinstance(value, torch.Tensor):
            saved[key] = list(value.shape)
        elif isinstance(value, (tuple, list)) and value and all(isinstance(v, torch.Tensor) for v in value):
            saved[key] = f"{len(value)} tensors"
    if node.name() == "torch::autograd::AccumulateGrad" and isinstance(getattr(node, "variable", None), torch.Tensor):
        saved["variable"] = list(node.variable.shape)
    seq = int(node._sequence_nr())
    nexts = node.next_functions
    children = [None if n is None else _eager(n, depth - 1, breadth) for n, _ in nexts[:breadth]] if depth > 0 else []
    return NodeRecord(
        name=node.name(),
        seq_nr=None if seq == _NO_SEQ else seq,
        next=children,
        saved=saved,
        truncated=len(nexts) > breadth if depth > 0 else bool(nexts),
    )


class Checkpointed(nn.Module):
    """Checkpointing both ways: saved-tensor hooks, and a backward nested in the main one."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Sequential(nn.Linear(6, 6), nn.Tanh())
        self.b = nn.Sequential(nn.Linear(6, 6), nn.GELU())
        self.c = nn.Linear(6, 2)

    def forward(self, x):
        h = checkpoint(self.a, x, use_reentrant=False)
        h = checkpoint(self.b, h, use_reentrant=True)
        return self.c(h)


class Penalised(nn.Module):
    """torch.autograd.grad with create_graph inside forward (a gradient penalty), then
    the main backward over a graph that one already ran through."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.out = nn.Linear(4, 1)

    def forward(self, x):
        x = x.requires_grad_()
        y = self.out(torch.tanh(self.fc(x)))
        (g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
        return y.sum() + g.pow(2).sum()


def _sample(name):
    sample = load_sample(name)
    return sample.build_model(), sample.example_inputs(), getattr(sample, "loss_fn", None)


CASES = {
    "cnn": lambda: _sample("cnn"),
    "rnn": lambda: _sample("rnn"),
    "transformer": lambda: _sample("transformer"),
    "checkpointed": lambda: (Checkpointed(), torch.randn(3, 6), None),
    "penalised": lambda: (Penalised(), torch.randn(2, 4), None),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_node_records_equal_an_eager_reading_at_every_firing(name, monkeypatch):
    torch.manual_seed(0)
    model, inputs, loss_fn = CASES[name]()
    lazy = nodes.described  # what the tracer calls at every firing with a node
    pairs = []

    def checked(node, *args, **kwargs):
        name, got = lazy(node, *args, **kwargs)
        want = eager_record(node)
        pairs.append((got, want))
        assert name == (None if want is None else want.name)
        return name, got

    monkeypatch.setattr(nodes, "described", checked)
    trace = hooktui.record(model, inputs, loss_fn, legacy=True)
    assert not trace.failed, trace.error and trace.error.traceback
    assert len(pairs) >= sum(e.node is not None for e in trace.events) > len(trace.events) // 3
    # Read only now, after the run: built from what was taken at each firing.
    mismatches = [(got, want) for got, want in pairs if got != want]
    assert not mismatches, mismatches[0]
    saved = [str(want.saved) for _, want in pairs if want is not None]
    assert any("freed" in s for s in saved)  # the backward did free saved tensors on the way


def test_node_records_are_shared_between_firings():
    """Unchanged trees are one object: a deep stack does not make a record per node per firing."""
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Sequential(nn.Linear(8, 8), nn.Tanh()) for _ in range(16)])
    trace = hooktui.record(model, torch.randn(2, 8))
    distinct: dict[int, NodeRecord] = {}
    in_trees = 0  # every node of every firing's tree: one record each without sharing
    stack = [e.node for e in trace.events if e.node is not None]
    while stack:
        record = stack.pop()
        if record is not None:
            in_trees += 1
            distinct[id(record)] = record
            stack.extend(record.next)
    assert len(distinct) * 3 < in_trees
