"""The Stack Overflow model: why does the backward hook of fc1 get the "wrong" grad_input?

Linear(10, 5) -> Linear(5, 1) on a (1, 1, 10) input. Open it with `hooktui` (the default
model) or `hooktui sample_models/seed.py`.
"""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 5)
        self.fc2 = nn.Linear(5, 1)

    def forward(self, x):
        x = self.fc1(x)
        x = self.fc2(x)
        return x


def build_model():
    torch.manual_seed(0)
    return Model()


def example_inputs():
    return torch.arange(10, dtype=torch.float32).reshape(1, 1, 10)
