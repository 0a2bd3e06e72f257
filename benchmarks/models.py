"""The models the benchmarks measure, built the same way every time (seeded)."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class BasicBlock(nn.Module):
    """torchvision's ResNet BasicBlock: one in-place ReLU module called twice, `out += identity`."""

    def __init__(self, cin: int, cout: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        return self.relu(out)


class ResNet18Layout(nn.Module):
    """ResNet-18's layout (4 stages x 2 BasicBlocks) at CIFAR size: 16 -> 128 channels."""

    def __init__(self, widths=(16, 32, 64, 128), classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, widths[0], 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        self.relu = nn.ReLU(inplace=True)
        stages, cin = [], widths[0]
        for i, width in enumerate(widths):
            stride = 1 if i == 0 else 2
            stages.append(nn.Sequential(BasicBlock(cin, width, stride), BasicBlock(width, width)))
            cin = width
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.pool(x), 1))


def resnet_case(batch: int = 16):
    """(label, model, inputs, loss_fn): the ResNet-18 layout on CIFAR-sized inputs."""
    torch.manual_seed(0)
    model = ResNet18Layout()
    x = torch.randn(batch, 3, 32, 32)
    target = torch.randint(0, 10, (batch,))
    return f"ResNet-18 layout, CIFAR, batch {batch}", model, x, lambda out: F.cross_entropy(out, target)


def mlp_blocks(blocks: int = 64, width: int = 64) -> nn.Sequential:
    layers = []
    for _ in range(blocks):
        layers += [nn.Linear(width, width), nn.GELU()]
    return nn.Sequential(*layers)


def mlp_case(blocks: int = 64, width: int = 64, batch: int = 32):
    """(label, model, inputs, loss_fn): `blocks` x (Linear(width, width) + GELU)."""
    torch.manual_seed(0)
    return f"{blocks} x (Linear({width},{width})+GELU), batch {batch}", mlp_blocks(blocks, width), torch.randn(batch, width), None


def deep_linear(modules: int, width: int = 8, batch: int = 4):
    """A deep MLP of `modules` small Linear layers (the scaling benchmark)."""
    torch.manual_seed(0)
    return nn.Sequential(*[nn.Linear(width, width) for _ in range(modules)]), torch.randn(batch, width)
