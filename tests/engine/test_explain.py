"""The explain pane's statements, checked field by field against what plain PyTorch says
about the same modules (shapes from plain forward hooks, None-ness from plain full
backward hooks)."""

from __future__ import annotations

import torch
from plain_hooks import plain_firings
from torch import nn

import hooktui
from hooktui.explain import explain
from hooktui.engine.records.format import shape_text
from hooktui.engine.records.records import TensorRecord


def _shape(t) -> str:
    return shape_text(TensorRecord(name="", shape=list(t.shape)))


def _trace(build, x):
    torch.manual_seed(0)
    model = build()
    trace = hooktui.record(model, x)
    assert not trace.failed, trace.error
    return trace


def _plain(build, x):
    torch.manual_seed(0)
    firings, _ = plain_firings(build(), (x,), {})
    return {(f.hook, f.module, f.call): f for f in firings}


def _event(trace, hook, module, call=0):
    return next(e for e in trace.events if (e.hook, e.module, e.call) == (hook, module, call))


def _texts(event, trace):
    return [s for s in explain(event, trace.events, trace.info)]


def test_conv2d_backward_statements_match_plain_hooks():
    def build():
        return nn.Sequential(nn.Conv2d(2, 3, 3), nn.Conv2d(3, 1, 3))

    x = torch.randn(1, 2, 7, 7)
    trace, plain = _trace(build, x), _plain(build, x)
    event = _event(trace, "backward", "1")
    grad_input = plain[("backward", "1", 0)].tensors[0]
    statements = _texts(event, trace)
    line = next(s for s in statements if s.text.startswith("`grad_input[0]`"))
    assert "positional input 0 of `1` (Conv2d, call 0)" in line.text
    assert _shape(grad_input) in line.text and line.ok is True and "same as that input ✓" in line.text
    # Its parameters' gradients are named, with the firing where they arrive.
    param_events = {t.target: e.index for e in trace.events if e.hook == "param_grad" for t in e.tensors}
    for name in ("1.weight", "1.bias"):
        said = next(s.text for s in statements if s.text.startswith(f"`{name}`"))
        assert f"firing #{param_events[name]}" in said


def test_first_layer_fed_plain_data_says_none_and_early():
    def build():
        return nn.Sequential(nn.Linear(10, 5), nn.Linear(5, 1))

    x = torch.randn(2, 10)  # a 2-D input: Linear is a single addmm here
    trace, plain = _trace(build, x), _plain(build, x)
    assert plain[("backward", "0", 0)].tensors == [None]  # PyTorch's own view
    statements = _texts(_event(trace, "backward", "0"), trace)
    assert any(s.text == "`grad_input[0]` is None: this input does not require grad." for s in statements)
    assert any("fired early" in s.text.lower() for s in statements)
    forward = _texts(_event(trace, "forward", "0"), trace)
    out = next(s.text for s in forward if s.text.startswith("`output`"))
    assert _shape(torch.empty(2, 5)) in out and "AddmmBackward0" in out


def test_grad_output_is_matched_to_the_output_of_the_same_call():
    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.head = nn.Linear(4, 2)

        def forward(self, x):
            return self.head(self.lin(self.lin(x)))

    x = torch.randn(3, 4, requires_grad=True)
    trace, plain = _trace(Twice, x), _plain(Twice, x)
    for call in (0, 1):
        event = _event(trace, "backward_pre", "lin", call)
        assert trace.events[event.forward_index].call == call
        line = next(s for s in _texts(event, trace) if s.text.startswith("`grad_output[0]`"))
        assert f"output of `lin` (Linear, call {call})" in line.text
        assert _shape(plain[("backward_pre", "lin", call)].tensors[0]) in line.text and line.ok is True


def test_dict_output_names_each_output():
    class Heads(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(3, 3)

        def forward(self, x):
            h = self.body(x)
            return {"logits": h * 2, "hidden": h}

    x = torch.randn(2, 3)
    trace = _trace(Heads, x)
    pre = _texts(_event(trace, "backward_pre", ""), trace)
    # PyTorch's hooks never fire for a dict output: both gradients are extras, never
    # shown under a PyTorch slot name.
    assert not [s for s in pre if s.text.startswith("`grad_output")]
    targets = [s.text for s in pre if s.text.startswith("`grad of output")]
    assert "output['logits']" in targets[0] and "output['hidden']" in targets[1]
    assert all("an extra, not an argument of PyTorch's hook" in t for t in targets)
    forward = [s.text for s in _texts(_event(trace, "forward", ""), trace) if s.text.startswith("`output")]
    assert [t.split("`")[1] for t in forward] == ["output['logits']", "output['hidden']"]


def test_statements_come_from_the_record_not_the_model_name():
    """Same layer, different facts, different words: a Linear whose input requires grad."""

    def build():
        return nn.Sequential(nn.Linear(10, 5))

    x = torch.randn(2, 10, requires_grad=True)
    trace = _trace(build, x)
    statements = _texts(_event(trace, "backward", "0"), trace)
    assert not any("fired early" in s.text.lower() for s in statements)
    assert any(s.ok is True and s.text.startswith("`grad_input[0]`") for s in statements)
