"""Where a bad value was born (engine/analysis/born.py), for the cases of the hunt issue. Each model
is built so that the module, op and line that make the bad value are known by
construction; the line is found in the model's source text, never taken from the engine."""


import torch
from torch import nn

from hooktui import Session, record
from hooktui.engine.analysis.born import where_born
from hooktui.engine.analysis.breakpoints import Breakpoint
from hooktui.engine.records.records import position_of
from nan_models import ZeroVarianceNorm, fp16_overflow_model, line_of, zero_variance_model
from plain_hooks import SAMPLES, load_sample


def hunt(model, inputs, loss_fn=None, bp=None):
    """Run with a non-finite breakpoint set before the run; stop at its first hit."""
    session = Session(model, inputs, loss_fn, pause=False)
    session.add_breakpoint(bp or Breakpoint.nonfinite())
    session.gate.resume()
    session.run(on_state=lambda s: s == "paused" and session.quit())
    return session.trace.events


def at(events, born):
    """The firing `born` names, found by its number (numbers skip counted legacy firings
    and a hunt's node firing is N.1: engine/records/firing.py), not taken as a position."""
    return events[position_of(events, *born.origin_key)]


def line_in(path, text):
    hits = [i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    assert len(hits) == 1, hits
    return hits[0]


class LogHead(nn.Module):
    def forward(self, p):
        return torch.log(p)  # log(0) = -Inf


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(3, 3)
        self.log = LogHead()

    def forward(self, x):
        p = torch.softmax(self.fc(x) * 1e4, dim=-1)  # saturates: exact zeros
        return self.log(p)


def test_log_of_zero_in_forward_is_born_in_the_module_that_calls_log():
    events = hunt(Classifier(), torch.randn(4, 3), loss_fn=lambda out: out.sum())
    born = where_born(events)
    assert (born.phase, born.module, born.tensor) == ("forward", "log", "output")
    assert "-Inf" in born.what
    assert "LogBackward0" in born.text
    assert f"test_born.py:{line_of(LogHead, 'torch.log(p)')}: return torch.log(p)" in born.text
    assert at(events, born).hook == "forward" and at(events, born) is events[-1]


def test_sqrt_of_zero_in_backward_is_born_at_the_sqrt_node_of_the_norm():
    sample = load_sample("nan_hunt")
    model, inputs = sample.build_model(), sample.example_inputs()
    events = hunt(model, inputs, sample.loss_fn)
    # Independent: every forward value is finite (plain forward hooks).
    outs = []
    handles = [m.register_forward_hook(lambda m, a, o: outs.append(torch.isfinite(o).all().item())) for m in model.modules()]
    with torch.no_grad():
        model(inputs)
    for h in handles:
        h.remove()
    assert all(outs)
    born = where_born(events)
    assert born.phase == "backward" and at(events, born).hook == "node"
    assert at(events, born).grad_fn == "SqrtBackward0"
    assert born.module == "blocks.2.norm"  # the last block runs backward first
    assert f"nan_hunt.py:{line_in(SAMPLES / 'nan_hunt.py', 'torch.sqrt(ms)')}" in born.text
    assert "1/(2·sqrt(x))" in born.text


def test_division_by_a_zero_variance():
    events = hunt(zero_variance_model(), torch.randn(3, 2))
    born = where_born(events)
    assert (born.module, born.tensor, at(events, born).hook) == ("1", "output", "forward")
    assert "NaN" in born.what and "DivBackward0" in born.text
    assert f":{line_of(ZeroVarianceNorm, 'x.std()')}:" in born.text


def test_fp16_overflow_says_the_dtype_limit():
    model = fp16_overflow_model()
    x = torch.ones(1, 4, dtype=torch.float16)
    # Independent: the first layer's output is 1200 (finite), the second's 1.44e6 (> 65504).
    assert torch.isfinite(model[0](x)).all() and not torch.isfinite(model(x)).all()
    events = hunt(model, x, loss_fn=lambda out: out.float().clamp(max=1).sum())
    born = where_born(events)
    assert (born.module, born.tensor) == ("1", "output")
    assert "+Inf" in born.what and "65504" in born.text


def test_exploding_gradient_born_with_a_threshold():
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(4, 4, bias=False) for _ in range(100)])
    with torch.no_grad():
        for layer in model:
            layer.weight.copy_(torch.eye(4) * 1.2)
    x = torch.ones(1, 4, requires_grad=True)
    bp = Breakpoint.threshold(1e3, stat="norm", phase="backward", tensor="grad_input*")
    events = record(model, x).events
    born = where_born(events, bp)
    # Independent: the gradient at layer i's input is 1.2 ** (100 - i) * norm(ones) = 2 * 1.2 ** (100 - i).
    first = max(i for i in range(100) if 2 * 1.2 ** (100 - i) > 1e3)
    assert (born.module, at(events, born).hook, born.tensor) == (str(first), "backward", "grad_input[0]")
    assert "norm" in born.what and "within norm ≤ 1000" in born.text


def test_nothing_bad_means_no_birth():
    model = nn.Sequential(nn.Linear(2, 2))
    assert where_born(record(model, torch.ones(1, 2)).events) is None


def test_born_names_firing_numbers_where_a_saved_trace_skips_some():
    """A saved trace leaves legacy firings out, so positions and firing numbers part: the
    Explain pane's "where it was born (#N)" named a position (a firing holding no NaN)."""
    sample = load_sample("nan_hunt")
    session = Session(sample.build_model(), sample.example_inputs(), sample.loss_fn, pause=False, legacy=True)
    session.add_breakpoint(Breakpoint.nonfinite())
    session.gate.resume()
    session.run(on_state=lambda state: session.gate.resume() if state == "paused" else None)
    events = session.trace.events
    assert any(e.hook == "legacy_backward" for e in events)
    saved = [e for e in events if e.hook != "legacy_backward"]  # what `trace --save` writes
    full, gapped = where_born(events), where_born(saved)
    assert gapped.origin == full.origin == gapped.seen
    assert full.origin_key == gapped.origin_key
    origin = next(e for e in saved if e.key == gapped.origin_key)
    assert origin.grad_fn == "SqrtBackward0" and any(t.stats and t.stats.nan for t in origin.tensors)
    # upto is a firing number too: stopping at the origin finds it, one before it does not
    # (the hunt's node firing is N.1: the plain firing N comes before it).
    assert where_born(saved, upto=gapped.origin_key).origin_key == gapped.origin_key
    assert gapped.origin_sub == 1 and where_born(saved, upto=gapped.origin) is None


class Scoped(nn.Module):
    """`features` receives what the root received, or (`scale`) what the root's own code made of it."""

    def __init__(self, scale=None):
        super().__init__()
        torch.manual_seed(0)
        self.features = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
        self.scale = scale

    def forward(self, x):
        if self.scale is not None:
            x = x * self.scale
        return self.features(x)


def _features_input_is_the_model_input(model, x) -> bool:
    """Plain forward pre-hooks: is what `features` receives the very tensor the model received?"""
    seen = {}
    handles = [model.register_forward_pre_hook(lambda m, args: seen.__setitem__("root", args[0])),
               model.features.register_forward_pre_hook(lambda m, args: seen.__setitem__("features", args[0]))]
    model(x)
    for handle in handles:
        handle.remove()
    return seen["features"] is seen["root"]


def test_a_scoped_threshold_crossed_by_the_model_input_blames_the_input_not_the_scope():
    x = torch.full((2, 4), 10.0)  # norm 28.3 > 5 already in the data
    bp = Breakpoint.threshold(5.0, stat="norm", module="features*")
    model = Scoped()
    assert _features_input_is_the_model_input(model, x)
    events = hunt(model, x, bp=bp)
    born = where_born(events, bp)
    assert (born.module, born.phase) == ("features", "forward")
    assert "unchanged from args[0] of (root)" in born.text and "the model's input" in born.text
    assert "made in the forward" not in born.text
    # Made by the root's own code (x * 3) before features: that is where it says it was made.
    model = Scoped(scale=3.0)
    assert not _features_input_is_the_model_input(model, torch.full((2, 4), 1.0))
    events = hunt(model, torch.full((2, 4), 1.0), bp=bp)  # norm 2.8 in the data, 8.5 once scaled
    born = where_born(events, bp)
    assert "made" in born.text and "in the forward of (root)" in born.text and "unchanged" not in born.text


def test_born_reads_a_notes_kind_not_its_wording():
    """born.py finds "made outside every module call" by the note's kind (records/notes.py):
    the same words as a plain note say nothing; other words with the kind do."""
    from hooktui.engine.records.notes import Note
    from hooktui.engine.records.records import Event, TensorRecord, TensorStats

    def node_firing(note):
        bad = TensorRecord("grad_inputs[0]", [2], target="x", stats=TensorStats(count=2, nan=1, nonfinite=1))
        return Event(0, "backward", "node", "fc", "Linear", 0, grad_fn="SqrtBackward0", tensors=[bad], notes=[note])

    words = "made outside every module call (in the loss, or between the calls of the root module)"
    assert "outside every module call" in where_born([node_firing(Note("made_outside", "said otherwise"))]).lines[0]
    assert "in the backward of fc" in where_born([node_firing(words)]).lines[0]
