"""Where does the NaN come from? A distance whose gradient is NaN though every forward
value is finite.

The model embeds two batches of points with one shared encoder, then takes the
Euclidean distance between the embeddings: `sqrt(sum((a - b) ** 2))`. Row 1 of the two
inputs is the same point, so its distance is exactly 0, a finite forward value.

In backward, d sqrt(s)/ds = 1 / (2 sqrt(s)) is infinite at s = 0: the `sqrt` module's
grad_input shows -Inf (the gradient arriving from the loss is negative). The chain rule
then multiplies that Inf by d s/d(a - b) = 2 (a - b) = 0, giving NaN: the `sq_dist`
module's grad_input. From there NaN flows into the encoder's grad_output, for both of
its calls, and into its weight gradient.

Step through backward with `hooktui sample_models/nan.py` and watch the NaN/Inf flags
appear first in `sqrt`, then `sq_dist`; `hooktui trace sample_models/nan.py` prints them.
The usual fix: `torch.sqrt(s + eps)` or `s.clamp_min(eps).sqrt()`.
"""

import torch
from torch import nn


class SquaredDistance(nn.Module):
    def forward(self, a, b):
        return ((a - b) ** 2).sum(dim=-1)


class Sqrt(nn.Module):
    def forward(self, s):
        return torch.sqrt(s)  # no eps: the gradient at 0 is Inf


class Siamese(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(4, 3)
        self.sq_dist = SquaredDistance()
        self.sqrt = Sqrt()
        self.head = nn.Linear(1, 1)

    def forward(self, x, y):
        distance = self.sqrt(self.sq_dist(self.encoder(x), self.encoder(y)))
        return self.head(distance.unsqueeze(-1))


def build_model():
    torch.manual_seed(0)
    return Siamese()


def example_inputs():
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(3, 4, generator=generator)
    y = torch.randn(3, 4, generator=generator)
    y[1] = x[1]  # the same point twice: distance 0
    return (x, y)


def loss_fn(output):
    return ((output - 1.0) ** 2).mean()
