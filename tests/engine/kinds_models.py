"""Small models whose tensors are nested or sparse (issue 31, items 5-6): shared by the parity
tests (test_parity_round4_kinds.py) and the UI's (tests/ui/test_ui_layouts.py)."""

from __future__ import annotations

import torch
from torch import nn


class NestedEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=True)
        self.head = nn.Linear(8, 2)

    def forward(self, x, mask):
        return self.head(self.enc(x, src_key_padding_mask=mask))


def nested_model() -> NestedEncoder:
    torch.manual_seed(0)
    model = NestedEncoder()
    model.enc.eval().requires_grad_(False)
    return model


def nested_inputs() -> dict:
    g = torch.Generator().manual_seed(1)
    mask = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    return {"x": torch.randn(2, 5, 8, generator=g), "mask": mask}


class SparseTables(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 3, sparse=True)
        self.bag = nn.EmbeddingBag(10, 3, sparse=True, mode="sum")

    def forward(self, i):
        # Row 3 is used twice and row 1 in both tables: an uncoalesced gradient.
        return (self.emb(i) * torch.arange(1.0, 4.0)).sum() + (self.bag(i) ** 2).sum()


def sparse_index() -> torch.Tensor:
    return torch.tensor([[1, 3, 3], [7, 1, 2]])
