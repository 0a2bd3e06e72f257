"""Models that make a bad value at a place known by construction, for the hunt
(tests/engine/test_born.py) and the guard (tests/loop/test_guard*.py); and line_of, which
finds a line in a model's source text, never in what the engine says (tests/ is on
sys.path: tests/conftest.py)."""

import inspect

import torch
from torch import nn


def line_of(obj, text: str) -> int:
    """The line number of the line of `obj`'s source containing `text`."""
    lines, start = inspect.getsourcelines(obj)
    hits = [start + i for i, line in enumerate(lines) if text in line]
    assert len(hits) == 1, hits
    return hits[0]


class ZeroVarianceNorm(nn.Module):
    def forward(self, x):
        return (x - x.mean()) / x.std()  # a constant input: 0 / 0


def zero_variance_model() -> nn.Module:
    """Its second module's output is NaN: the first one's output is constant (every weight 0, bias 1)."""
    model = nn.Sequential(nn.Linear(2, 2), ZeroVarianceNorm())
    with torch.no_grad():
        model[0].weight.zero_()
        model[0].bias.fill_(1.0)
    return model


def fp16_overflow_model() -> nn.Module:
    """In float16, every weight 300, bias 0: on torch.ones(1, 4) the first layer's output is
    1200 (finite), the second's 1.44e6 (> 65504, +Inf)."""
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4)).half()
    with torch.no_grad():
        for layer in model:
            layer.weight.fill_(300.0)
            layer.bias.zero_()
    return model
