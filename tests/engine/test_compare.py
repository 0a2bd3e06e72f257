"""Two runs compared (engine/analysis/compare.py): identical runs agree, a perturbation is found at
the firing where it enters, fp32 vs bf16 parts within bfloat16's rounding.

The firing a perturbation must be found at is known from how it was made (the input, one
layer's weight, the loss, one number of one saved record picked by a seeded generator),
never from the comparison itself.
"""

from __future__ import annotations

import copy
import json
import math
import random

import pytest
import torch

from hooktui.engine.analysis.compare import Tolerance, compare
from hooktui.engine.records.records import Event, TensorRecord, TensorStats
from hooktui.engine.run.session import record
from hooktui.engine.summaries.stats import StatsOptions
from hooktui.engine.records.trace_file import event_json

from plain_hooks import load_sample
from small_models import TwoLayers


def build():
    torch.manual_seed(0)
    return TwoLayers()


def data():
    return torch.randn(4, 6, generator=torch.Generator().manual_seed(1))


def loss(output):
    return output.pow(2).mean()


def run(model=None, inputs=None, loss_fn=loss) -> list[Event]:
    """A run's firings as a saved trace holds them: every record its own (a live run
    shares one summary between the records of one unchanged tensor)."""
    trace = record(model or build(), data() if inputs is None else inputs, loss_fn)
    return [Event.from_dict(json.loads(event_json(event))) for event in trace.events]


def position_of(events, hook, module, call=0):
    return next(i for i, e in enumerate(events) if e.hook == hook and e.module == module and e.call == call)


def test_identical_runs_agree():
    a, b = run(), run()
    result = compare(a, b)
    assert result.agree and result.first_difference is None
    assert result.aligned == len(a) == len(b)
    assert all(m.rel == 0 for m in result.modules())


@pytest.mark.parametrize(
    "change, hook, module",
    [
        # The input: the root's forward_pre sees it first.
        ("input", "forward_pre", ""),
        # fc2's weight: fc2's inputs are unchanged, its output is not.
        ("fc2.weight", "forward", "fc2"),
        # The loss only: forward is identical, the first gradient is not.
        ("loss", "backward_pre", ""),
    ],
)
def test_a_perturbed_run_differs_first_where_the_change_enters(change, hook, module):
    a = run()
    model, inputs, loss_fn = build(), data(), loss
    if change == "input":
        inputs[2, 3] += 1e-3
    elif change == "fc2.weight":
        with torch.no_grad():
            model.fc2.weight[1, 2] += 1e-3
    else:
        def loss_fn(output):
            return output.pow(2).mean() * 1.001
    b = run(model, inputs, loss_fn)
    result = compare(a, b)
    assert not result.agree
    first = result.first_difference
    assert (first.a, first.b) == (position_of(a, hook, module), position_of(b, hook, module))
    # Every firing before it agrees, and tensors are compared by name.
    assert not any(f.differs for f in result.firings[: result.firings.index(first)])
    # A tolerance wider than the change makes the runs agree again.
    assert compare(a, b, Tolerance(rtol=0.05, atol=1e-4)).agree


def _perturbable(events):
    """(position, tensor number, statistic) of every saved number a perturbation may hit."""
    out = []
    for p, event in enumerate(events):
        for t, tensor in enumerate(event.tensors):
            stats = tensor.stats
            if stats is not None and stats.absmax:
                out += [(p, t, name) for name in ("max", "mean", "norm") if getattr(stats, name)]
    return out


@pytest.mark.parametrize("seed", range(6))
def test_seeded_perturbations_of_a_saved_run_are_found_at_that_firing(seed):
    a = run()
    b = copy.deepcopy(a)
    chooser = random.Random(seed)
    position, t, name = chooser.choice(_perturbable(b))
    stats = b[position].tensors[t].stats
    setattr(stats, name, getattr(stats, name) + 1e-3 * stats.absmax)
    result = compare(a, b)
    assert result.first_difference.a == position
    assert result.differing == 1
    assert result.first_difference.worst.what == name
    # Under the tolerance: 1e-3 of the tensor's magnitude is inside rtol 2e-3.
    assert compare(a, b, Tolerance(rtol=2e-3, atol=0)).agree


def test_nan_counts_shapes_and_missing_firings_differ():
    a = run()
    b = copy.deepcopy(a)
    p = position_of(b, "backward", "fc2")
    b[p].tensors[0].stats.nan = 1
    result = compare(a, b)
    assert result.first_difference.a == p
    assert result.first_difference.worst.reason == "NaN count 0 vs 1"
    b = copy.deepcopy(a)
    p = position_of(b, "forward", "fc1")
    b[p].tensors[-1].shape = [4, 6]
    assert compare(a, b).first_difference.worst.reason == "shape (4, 5) vs (4, 6)"
    # A firing only one run has: placed where it happened, a difference.
    c = copy.deepcopy(a)
    extra = position_of(c, "forward", "act")
    del c[extra]
    result = compare(a, c)
    first = result.first_difference
    assert (first.a, first.b) == (extra, None)
    assert result.only_in("a") == 1 and result.only_in("b") == 0
    assert result.aligned == len(c)


def test_values_are_compared_where_both_runs_kept_them():
    stats = TensorStats(count=4, finite=4, min=0.0, max=3.0, mean=1.5, std=1.29, absmax=3.0, norm=3.74)
    a = TensorRecord("output", [2, 2], stats=stats, values=[0.0, 1.0, 2.0, 3.0], values_shape=[2, 2])
    b = copy.deepcopy(a)
    b.values = [0.0, 1.0, 2.01, 3.0]  # statistics the same, one value not
    event = Event(0, "forward", "forward", "m", "M", 0, tensors=[a])
    twin = Event(0, "forward", "forward", "m", "M", 0, tensors=[b])
    diff = compare([event], [twin]).first_difference.worst
    assert diff.what == "values[1, 0]" and (diff.a, diff.b) == (2.0, 2.01)
    assert math.isclose(diff.rel, 0.01 / 3.0)
    # NaN facing NaN agrees; NaN facing a number does not.
    a.values, b.values = [math.nan, 1.0, 2.0, 3.0], [math.nan, 1.0, 2.0, 3.0]
    assert compare([event], [twin]).agree
    b.values = [0.0, 1.0, 2.0, 3.0]
    assert compare([event], [twin]).first_difference.worst.what == "values[0, 0]"


def test_tensors_compared_by_statistics_only_are_counted():
    """A run saved with `trace --values 0` keeps no values: its tensors can only be
    compared by their statistics, and the comparison says for how many that was so. Values
    that differ while every statistic agrees (two entries swapped) show why it matters."""
    with_values = run()
    stats_only = [Event.from_dict(json.loads(event_json(e)))
                  for e in record(build(), data(), loss, options=StatsOptions(keep_values=False)).events]
    numeric = sum(1 for e in with_values for t in e.tensors if not t.is_missing)
    assert compare(with_values, run()).values_coverage() == (numeric, numeric)
    assert compare(with_values, stats_only).values_coverage() == (0, numeric)

    swapped = copy.deepcopy(with_values)
    position = position_of(swapped, "forward", "fc1")
    output = next(t for t in swapped[position].tensors if t.name == "output")
    output.values[0], output.values[1] = output.values[1], output.values[0]
    assert output.values[0] != output.values[1]
    assert not compare(with_values, swapped).agree  # seen where both kept the values
    result = compare(swapped, stats_only)
    assert result.agree and result.values_coverage() == (0, numeric)  # not seen: said so


def test_float32_and_bfloat16_part_within_bfloat16_rounding():
    """The seed model in float32 and in bfloat16, on a random input. The first difference
    is the input cast, at most bfloat16's unit roundoff 2^-8 (8 significant bits) of the tensor's magnitude;
    each module's output then differs by at least what plain PyTorch measures elementwise
    between the two runs (the diff compares every kept value) and by at most a few
    percent."""
    module = load_sample("seed")
    x = torch.randn(1, 1, 10, generator=torch.Generator().manual_seed(3))
    assert not torch.equal(x, x.bfloat16().float())  # the cast itself rounds

    def traced(dtype):
        return run(module.build_model().to(dtype), x.to(dtype), None)

    a, b = traced(torch.float32), traced(torch.bfloat16)
    result = compare(a, b)
    assert not result.agree
    first = result.first_difference
    assert (a[first.a].hook, a[first.a].module) == ("forward_pre", "")
    assert first.worst.dtypes == ("float32", "bfloat16")
    assert 0 < first.rel <= 2**-8

    # Plain PyTorch: each module's output in both dtypes, elementwise.
    outputs = {}
    for dtype in (torch.float32, torch.bfloat16):
        model = module.build_model().to(dtype)
        hooks = [m.register_forward_hook(lambda m, i, o, n=n, d=dtype: outputs.setdefault(n, {}).__setitem__(d, o.detach().double()))
                 for n, m in model.named_modules()]
        model(x.to(dtype))
        for h in hooks:
            h.remove()
    by_position = result.by_position()
    for name, pair in outputs.items():
        x, y = pair[torch.float32], pair[torch.bfloat16]
        elementwise = ((x - y).abs().max() / max(x.abs().max(), y.abs().max())).item()
        firing = by_position[position_of(a, "forward", name)]
        output = next(t for t in firing.tensors if t.name == "output")
        assert elementwise * (1 - 1e-9) <= output.rel <= 2**-5, name
    assert all(0 < m.rel <= 2**-5 for m in result.modules())
    assert compare(a, b, Tolerance(rtol=2**-5, atol=0)).agree
