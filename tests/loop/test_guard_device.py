"""hooktui.guard on the device path (issue 22, goal 4), run on the CPU through
StatsOptions(defer_host=True): no value is read back at any firing, the step's counts are
read once when it ends, and the error names the same firing, in the same words, as the
guard that checks at every firing (the host path, test_guard.py's expectations)."""

from __future__ import annotations

import functools
import math

import pytest
import torch
from torch import nn

import hooktui
from hooktui.engine.summaries import lazy_stats
from hooktui.engine.summaries.stats import StatsOptions
from hooktui.engine.records.trace_file import read_trace_file
from nan_models import fp16_overflow_model, zero_variance_model
from test_guard import LogHead, load, loop

DEFER = StatsOptions(defer_host=True)


def _same(host: hooktui.GuardError, device: hooktui.GuardError) -> None:
    assert type(device) is type(host)
    assert (device.step, device.index) == (host.step, host.index)
    assert (device.born.seen, device.born.origin, device.born.phase, device.born.module, device.born.tensor,
            device.born.what) == (host.born.seen, host.born.origin, host.born.phase, host.born.module, host.born.tensor,
                                  host.born.what)
    # The message up to the trace file's name (each run saves its own file).
    assert str(device).split("\nThe step's firings")[0] == str(host).split("\nThe step's firings")[0]
    saved_host, saved_device = read_trace_file(host.trace_path).events, read_trace_file(device.trace_path).events
    assert [(e.index, e.hook, e.module, e.call) for e in saved_device] == [(e.index, e.hook, e.module, e.call) for e in saved_host]
    assert [[(t.name, t.nonfinite_counts) for t in e.tensors] for e in saved_device] == \
        [[(t.name, t.nonfinite_counts) for t in e.tensors] for e in saved_host]
    assert saved_device[-1].notes == saved_host[-1].notes


def _both(build, batches, loss_fn, **options):
    errors = []
    for stats_options in (None, DEFER):
        model = build()
        errors.append(loop(model, batches, loss_fn, stats_options=stats_options, **options))
    host, device = errors
    assert host is not None, "the case must stop the host guard"
    _same(host, device)
    return device


def _log_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 3), nn.Softmax(dim=-1), LogHead())


def test_log_of_zero_in_forward():
    torch.manual_seed(1)
    batches = [torch.randn(4, 3), torch.randn(4, 3) * 1e4, torch.randn(4, 3)]
    error = _both(_log_model, batches, lambda out: out.clamp(min=-50).sum())
    assert error.step == 1 and error.born.phase == "forward"


def test_sqrt_of_zero_in_backward_names_the_node():
    sample = load("nan_hunt")
    error = _both(sample.build_model, [sample.example_inputs()], sample.loss_fn)
    assert error.born.phase == "backward" and "SqrtBackward0" in str(error)
    assert read_trace_file(error.trace_path).events[-1].hook == "node"


def test_division_by_a_zero_variance():
    torch.manual_seed(2)
    _both(zero_variance_model, [torch.randn(3, 2)], lambda out: out.sum())


def test_fp16_overflow():
    _both(fp16_overflow_model, [torch.ones(1, 4, dtype=torch.float16)], lambda out: out.float().clamp(max=1).sum())


def test_exploding_gradient_with_a_threshold():
    def build():
        model = nn.Sequential(*[nn.Linear(4, 4, bias=False) for _ in range(40)])
        with torch.no_grad():
            for layer in model:
                layer.weight.copy_(torch.eye(4) * 1.2)
        return model

    x = torch.full((1, 4), 1.2**-40, requires_grad=True)
    error = _both(build, [x], lambda out: out.sum(), max_grad_norm=100.0)
    assert isinstance(error, hooktui.ThresholdError)


@pytest.mark.parametrize("inf", [True, False])
def test_inf_false_lets_an_inf_through_and_stops_at_the_nan(inf):
    def build():
        model = nn.Sequential(nn.Linear(2, 2), LogHead())
        with torch.no_grad():
            model[0].weight.copy_(torch.eye(2))
            model[0].bias.zero_()
        return model

    error = _both(build, [torch.tensor([[0.0, 1.0]])], lambda out: out.clamp(min=-1).sum(), inf=inf)
    assert error.born.phase == ("forward" if inf else "backward")


def test_a_grad_already_nan_from_outside():
    def run(stats_options):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 2))
        model[0].weight.grad = torch.full((2, 3), math.nan)
        with pytest.raises(hooktui.NonFiniteError) as caught, hooktui.guard(model, stats_options=stats_options):
            model(torch.ones(1, 3)).sum().backward()
        return caught.value

    _same(run(None), run(DEFER))


def test_train_loop_sample(monkeypatch):
    sample = load("train_loop")
    errors = []
    for stats_options in (None, DEFER):
        monkeypatch.setattr(hooktui, "guard", functools.partial(hooktui.loop.guard.guard, stats_options=stats_options))
        with pytest.raises(hooktui.NonFiniteError) as caught:
            sample.train(40, guard=True, log=lambda line: None)
        errors.append(caught.value)
    _same(*errors)


def test_no_value_is_read_back_at_any_firing_and_one_transfer_per_step(monkeypatch):
    """Clean steps: each ends with one transfer (the counts), and nothing in between."""
    torch.manual_seed(0)
    model = nn.Sequential(*[layer for _ in range(3) for layer in (nn.Linear(8, 8), nn.GELU())])
    per_firing = []
    guard = hooktui.guard(model, stats_options=DEFER)
    emit = guard._emit

    def counting(event, live):
        per_firing.append(lazy_stats.host_transfers)
        emit(event, live)

    monkeypatch.setattr(guard, "_emit", counting)
    reads = []
    for name in ("item", "tolist", "numpy", "__bool__", "__float__"):
        original = getattr(torch.Tensor, name)

        def reading(self, *args, _original=original, _name=name, **kwargs):
            reads.append(_name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, reading)
    before = lazy_stats.host_transfers
    steps = 3
    with guard:
        for _ in range(steps):
            model(torch.randn(4, 8)).sum().backward()
    monkeypatch.undo()
    assert len(per_firing) > 20 * steps
    # Within a step no firing sees a transfer; there is one per step, at its end.
    assert len(set(per_firing)) == steps and lazy_stats.host_transfers - before == steps
    assert reads == ["numpy"] * steps  # the counts' host copy, once a step


def test_a_last_forward_with_no_backward_is_checked_as_the_block_ends():
    """The host guard raises inside that forward; the deferred one as the `with` ends,
    naming the same firing."""

    def run(stats_options):
        model = nn.Sequential(nn.Linear(2, 2), LogHead())
        with torch.no_grad():
            model[0].weight.copy_(-torch.eye(2))
        reached_the_end = False
        with pytest.raises(hooktui.NonFiniteError) as caught, hooktui.guard(model, stats_options=stats_options):
            model(torch.ones(1, 2))  # log of a negative: NaN; grad on, and no backward follows
            reached_the_end = True
        return caught.value, reached_the_end

    (host, host_ended), (device, device_ended) = run(None), run(DEFER)
    assert (host_ended, device_ended) == (False, True)
    _same(host, device)
