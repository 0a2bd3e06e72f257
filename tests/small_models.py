"""Small models that several test folders record (tests/ is on sys.path: tests/conftest.py)."""

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
