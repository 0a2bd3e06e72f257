"""A model whose forward ends in a row norm without eps, fed a row of zeros (issue 30):
`torch.sqrt((x * x).sum(-1, keepdim=True))` is 0 there, finite; in backward, SqrtBackward0
computes g / (2 * sqrt(0)) = Inf. Its forward ends in that sqrt, so the legacy hook of
`norm` sits on SqrtBackward0 itself and sees the Inf first: a firing no view shows by
default. A model file (`hooktui trace tests/zero_row_sqrt.py`) and importable by tests."""

import torch
from torch import nn


class RowNorm(nn.Module):
    def forward(self, x):
        return torch.sqrt((x * x).sum(-1, keepdim=True))  # no eps: a zero row has norm 0


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4, bias=False)
        self.norm = RowNorm()
        self.head = nn.Linear(1, 1)

    def forward(self, x):
        return self.head(self.norm(self.proj(x)))


def build_model():
    torch.manual_seed(0)
    return Net()


def example_inputs():
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))
    x[1] = 0.0  # a row of zeros: proj (no bias) keeps it zero, its norm is 0
    return (x,)
