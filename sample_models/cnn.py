"""A small CNN: conv -> batchnorm -> in-place ReLU -> pool, twice, then a linear head.

The in-place ReLU after a hooked BatchNorm is what breaks PyTorch's own full backward
hooks; hooktui traces it unchanged.
"""

import torch
from torch import nn


class SmallCNN(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, kernel_size=3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, kernel_size=3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(16, classes)

    def forward(self, x):
        x = self.features(x)
        x = torch.flatten(x, 1)
        return self.head(x)


def build_model():
    torch.manual_seed(0)
    return SmallCNN()


def example_inputs():
    generator = torch.Generator().manual_seed(0)
    return torch.randn(1, 3, 32, 32, generator=generator)


def loss_fn(output):
    # Cross-entropy against class 3, as a training step would (on the output's device:
    # `hooktui sample_models/cnn.py --device cuda`).
    return nn.functional.cross_entropy(output, torch.tensor([3], device=output.device))
