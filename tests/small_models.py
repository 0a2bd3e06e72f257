"""Small models that several test folders record (tests/ is on sys.path: tests/conftest.py)."""

import torch
from torch import nn


class TwoLayers(nn.Module):
    """Linear(6, 5) → Tanh → Linear(5, 3), named fc1, act, fc2."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 5)
        self.act = nn.Tanh()
        self.fc2 = nn.Linear(5, 3)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Two(nn.Module):
    """Linear(4, 3) → tanh → Linear(3, 2), named fc1 and fc2 (the tanh is no module)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 3)
        self.fc2 = nn.Linear(3, 2)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))
