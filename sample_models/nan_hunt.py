"""Find where a NaN is born: every forward value is finite, a gradient is not.

A tiny token classifier: an embedding whose padding row is all zeros (`padding_idx=0`),
then blocks of `Linear -> GELU` each followed by a hand-written RMS norm that forgot its
epsilon. The padded position (token 0) stays an exact zero vector through every block
(no bias), so its RMS is `sqrt(0) = 0`: the forward divides 0 by `0 + 1e-6`, finite.

In backward, the derivative of sqrt at 0, 1/(2·sqrt(0)), is infinite, and the gradient
arriving there is 0: `SqrtBackward0` computes 0/0 = NaN inside `blocks.2.norm`, and the
NaN spreads to every gradient before it. detect_anomaly names only the op; hooktui
stops at that node, in that module call, with the line that created it:

    hooktui sample_models/nan_hunt.py --break-nonfinite     (then c)
    hooktui trace sample_models/nan_hunt.py --stop-at-nonfinite

The fix: `torch.sqrt(ms + self.eps)`.
"""

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        ms = (x * x).mean(dim=-1, keepdim=True)
        rms = torch.sqrt(ms)  # no eps: a zero row has rms 0 and an infinite derivative
        return self.scale * x / (rms + 1e-6)


class Block(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.linear = nn.Linear(dim, dim, bias=False)
        self.act = nn.GELU()
        self.norm = RMSNorm(dim)

    def forward(self, x):
        return self.norm(self.act(self.linear(x)))


class TokenClassifier(nn.Module):
    def __init__(self, vocab: int = 10, dim: int = 8, depth: int = 3, classes: int = 3) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim, padding_idx=0)
        self.blocks = nn.Sequential(*[Block(dim) for _ in range(depth)])
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens):
        return self.head(self.blocks(self.embed(tokens)))


def build_model():
    torch.manual_seed(0)
    return TokenClassifier()


def example_inputs():
    return torch.tensor([[3, 1, 4, 0], [5, 9, 2, 6]])  # the 0 is padding


def loss_fn(logits):
    labels = torch.tensor([[0, 1, 2, 0], [1, 2, 0, 1]], device=logits.device)
    return nn.functional.cross_entropy(logits.reshape(-1, 3), labels.reshape(-1))
