"""Small models for the UI tests. Kept in their own file so that the line numbers in
their tracebacks (shown in the exception snapshot) do not move when tests change."""

import torch
from torch import nn


class _Boom(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("boom: this backward always fails")


class FailsInBackward(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(4, 3)
        self.out = nn.Linear(3, 1)

    def forward(self, x):
        return self.out(_Boom.apply(self.fc(x)))


class FailsInForward(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(4, 3)
        self.out = nn.Linear(5, 1)  # wrong size: raises in forward

    def forward(self, x):
        return self.out(self.fc(x))


def inputs():
    return torch.arange(8, dtype=torch.float32).reshape(2, 4) / 8


class ExitsInForward(nn.Module):
    """Calls sys.exit() in the middle of forward."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        import sys

        y = self.fc(x)
        sys.exit(3)
        return y
