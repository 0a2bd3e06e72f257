"""Value breakpoints (non-finite, threshold, condition) on a live Session: where `resume()`
stops, hit counts, disabling, and a condition that raises. Expectations come from plain
PyTorch forward hooks in the test, not from the engine."""

import math

import pytest
import torch
from torch import nn

from hooktui import Session
from hooktui.engine.analysis.breakpoints import Breakpoint, BreakpointList
from hooktui.engine.records.records import Event, TensorRecord, TensorStats


def run_to_stops(model, inputs, breakpoints, loss_fn=None, limit=50):
    """Run with `breakpoints`, continuing from every stop; returns [(event, stop)]."""
    session = Session(model, inputs, loss_fn, pause=False)
    for bp in breakpoints:
        session.add_breakpoint(bp)
    session.gate.resume()
    stops = []

    def on_state(state):
        if state == "paused":
            stops.append((session.trace.events[-1], session.gate.stop))
            if len(stops) >= limit:
                session.quit()
            else:
                session.gate.resume()

    session.run(on_state=on_state)
    return session, stops


class Deep(nn.Module):
    """A stack of Linear layers scaled up so that the gradient grows layer by layer."""

    def __init__(self, depth=12, gain=3.0):
        super().__init__()
        torch.manual_seed(0)
        self.layers = nn.Sequential(*[nn.Linear(4, 4) for _ in range(depth)])
        with torch.no_grad():
            for layer in self.layers:
                layer.weight.copy_(torch.eye(4) * gain)
                layer.bias.zero_()

    def forward(self, x):
        return self.layers(x)


def plain_outputs(model, x):
    """(module name, output abs-max) per forward call, from plain forward hooks."""
    seen = []
    handles = [m.register_forward_hook(lambda m, a, out, n=n: seen.append((n, out.detach().abs().max().item())))
               for n, m in model.named_modules()]
    try:
        with torch.no_grad():
            model(x)
    finally:
        for h in handles:
            h.remove()
    return seen


def test_threshold_on_a_module_glob_stops_where_plain_hooks_say():
    model, x = Deep(), torch.ones(2, 4)
    expected = [n for n, absmax in plain_outputs(model, x) if n.startswith("layers.") and absmax > 1e3]
    assert expected, "the model must cross the bound"
    bp = Breakpoint.threshold(1e3, stat="absmax", module="layers.*", phase="forward", tensor="output*")
    session, stops = run_to_stops(model, x, [bp])
    stopped = [e.module for e, _ in stops if e.hook == "forward"]
    assert stopped == expected
    assert all(stop.breakpoint == bp and "absmax" in stop.reason for _, stop in stops)
    # The root also crosses the bound but is outside the glob.
    assert "" not in stopped


def test_exploding_gradient_through_100_layers_stops_at_the_first_large_grad():
    model, x = Deep(depth=100, gain=1.2), torch.ones(1, 4, requires_grad=True)
    bp = Breakpoint.threshold(1e3, stat="norm", phase="backward", tensor="grad_input*")
    # Independent: the gradient reaching each layer's input, with plain tensor hooks.
    norms = {}
    acts = []
    h = x
    for i, layer in enumerate(model.layers):
        h = layer(h)
        acts.append(h)
    for i, a in enumerate(acts):
        a.register_hook(lambda g, i=i: norms.__setitem__(i, g.norm().item()))
    acts[-1].sum().backward()
    # grad_input of layer i is the gradient at the input of layer i: at acts[i-1] (or x).
    first = max(i for i in range(1, 100) if norms[i - 1] > 1e3)  # backward runs from the last layer down
    session, stops = run_to_stops(model, torch.ones(1, 4, requires_grad=True), [bp], limit=1)
    event, stop = stops[0]
    assert (event.hook, event.module) == ("backward", f"layers.{first}")
    assert stop.reason.startswith("norm ") and "grad_input[0]" in stop.reason


def test_nonfinite_stops_at_the_first_nan_and_counts_hits():
    class LogOfZero(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)
            self.out = nn.Linear(3, 1)

        def forward(self, x):
            return self.out(torch.log(self.fc(x).relu()))  # log(0) = -Inf where relu cut

    torch.manual_seed(0)
    model = LogOfZero()
    x = torch.randn(4, 3)
    session, stops = run_to_stops(model, x, [Breakpoint.nonfinite()])
    first_event, first_stop = stops[0]
    assert (first_event.hook, first_event.module) == ("forward_pre", "out")
    assert "-Inf in args[0]" in first_stop.reason
    state = session.gate.breakpoint_list.states()[0]
    assert state.hits == len(stops) > 1


def test_nan_only_ignores_inf():
    class InfOnly(nn.Module):
        def forward(self, x):
            return x / torch.zeros_like(x)  # +Inf, no NaN (x > 0)

    model = nn.Sequential(InfOnly())
    x = torch.ones(2, requires_grad=True)
    _, stops = run_to_stops(model, x, [Breakpoint.nonfinite(inf=False)], loss_fn=lambda out: out.clamp(max=1).sum())
    assert all("NaN" in stop.reason for _, stop in stops)
    _, stops = run_to_stops(model, x, [Breakpoint.nonfinite()], loss_fn=lambda out: out.clamp(max=1).sum())
    assert stops and "+Inf" in stops[0][1].reason


def test_condition_sees_the_live_objects():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 3), nn.LayerNorm(3), nn.Linear(3, 1))
    x = torch.randn(2, 3)
    cond = 'module.__class__.__name__ == "LayerNorm" and grad_output is not None and grad_output[0].abs().max() > 0'
    _, stops = run_to_stops(model, x, [Breakpoint.condition(cond)])
    assert [(e.module, e.hook) for e, _ in stops] == [("1", "backward_pre"), ("1", "backward")]
    assert stops[0][1].reason == f"the condition {cond!r} is true"


def test_condition_that_raises_stops_with_the_error():
    model = nn.Sequential(nn.Linear(2, 2))
    _, stops = run_to_stops(model, torch.ones(1, 2), [Breakpoint.condition("output.shape[0] == 1")], limit=1)
    event, stop = stops[0]
    assert event.hook == "forward_pre"  # no `output` before the call: None has no .shape
    assert "raised AttributeError" in stop.reason


def test_condition_syntax_error_is_refused_at_once():
    with pytest.raises(ValueError, match="not a Python expression"):
        Breakpoint.condition("grad_output[0].abs(.max()")


def test_disabled_breakpoint_neither_stops_nor_counts():
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))
    bp = Breakpoint.on_module("1", phase="forward")
    session = Session(model, torch.ones(1, 2), pause=False)
    session.add_breakpoint(bp)
    session.gate.breakpoint_list.set_enabled(bp, False)
    session.gate.resume()
    paused = []
    session.run(on_state=lambda s: paused.append(s) or (s == "paused" and session.gate.resume()))
    assert "paused" not in paused
    assert session.gate.breakpoint_list.states()[0].hits == 0


def test_breakpoints_decided_from_records_work_on_a_recorded_trace():
    stats = TensorStats(count=4, finite=3, nan=1, absmax=2.0, norm=3.0)
    good = TensorStats(count=4, finite=4, absmax=2.0, norm=3.0)
    events = [
        Event(0, "forward", "forward", "a", "Linear", 0, tensors=[TensorRecord("output", [4], stats=good)]),
        Event(1, "forward", "forward", "b", "Linear", 0, tensors=[TensorRecord("output", [4], stats=stats)]),
    ]
    bps = BreakpointList()
    bps.add(Breakpoint.nonfinite())
    assert [bps.check(e, count=False) is not None for e in events] == [False, True]
    bps = BreakpointList()
    bps.add(Breakpoint.threshold(2.5, stat="norm", module="a"))
    assert [bps.check(e) is not None for e in events] == [True, False]
    assert bps.states()[0].hits == 1
    with pytest.raises(ValueError):
        Breakpoint.threshold(math.inf)


class CausalBlock(nn.Module):
    """A GPT block: the additive causal mask (-inf above the diagonal, no grad) goes into
    nn.MultiheadAttention as `attn_mask`, as every causal transformer passes it."""

    def __init__(self, width=8, heads=2):
        super().__init__()
        self.ln = nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x):
        t = x.shape[1]
        mask = torch.full((t, t), float("-inf")).triu(1)
        h = self.ln(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(x)


def test_an_additive_attention_mask_is_not_a_nonfinite_stop():
    torch.manual_seed(0)
    model, x = nn.Sequential(CausalBlock(), CausalBlock()), torch.randn(2, 5, 8)
    # Independent: the mask really reaches a module call holding -inf, and nothing else does.
    seen = []
    handles = [m.register_forward_pre_hook(lambda m, args, kwargs: seen.append(
        [t for t in list(args) + list(kwargs.values()) if isinstance(t, torch.Tensor) and torch.isinf(t).any()]),
        with_kwargs=True) for m in model.modules()]
    model(x).sum().backward()
    for h in handles:
        h.remove()
    assert any(bad and not bad[0].requires_grad for bad in seen)
    _, stops = run_to_stops(model, x, [Breakpoint.nonfinite()], loss_fn=lambda out: out.sum())
    assert stops == []


def test_nan_in_a_mask_and_inf_in_what_carries_a_gradient_still_stop():
    torch.manual_seed(0)

    class NanMask(CausalBlock):
        def forward(self, x):
            mask = torch.zeros(x.shape[1], x.shape[1])
            mask[0, 1] = float("nan")
            return self.attn(x, x, x, attn_mask=mask, need_weights=False)[0]

    _, stops = run_to_stops(nn.Sequential(NanMask()), torch.randn(1, 3, 8), [Breakpoint.nonfinite()], limit=1)
    assert stops and "NaN in kwargs['attn_mask']" in stops[0][1].reason

    class InfActivation(nn.Module):
        def forward(self, x):
            return x * float("inf")  # requires grad: a gradient flows through it

    model = nn.Sequential(nn.Linear(2, 2), InfActivation(), nn.Linear(2, 1))
    _, stops = run_to_stops(model, torch.ones(1, 2), [Breakpoint.nonfinite()], limit=1)
    event, stop = stops[0]
    assert (event.module, event.hook) == ("1", "forward") and "Inf in output" in stop.reason
