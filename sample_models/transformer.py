"""A one-block transformer language model called with keyword arguments, returning a dict.

What it demonstrates:
- inputs are keyword arguments (`input_ids=`, `attention_mask=`), as Hugging Face
  models take them: firings name them `kwargs['input_ids']`, `kwargs['attention_mask']`;
- the output is a dict: its tensors are `output['logits']` and `output['hidden']`.
  PyTorch's own full backward hook never fires for a module returning a dict; hooktui
  still shows the root's backward firings;
- residual connections (`x = x + ...`) around attention and the MLP: the block's input
  gets gradient both through the sublayers and straight through the skip;
- nn.MultiheadAttention (called with query, key and value all the same tensor), LayerNorm,
  GELU, and a padding mask that zeroes the loss on padded positions.

Run it with `hooktui sample_models/transformer.py`.
"""

import torch
from torch import nn

VOCAB, DIM, HEADS, SEQ = 16, 8, 2, 5


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(DIM)
        self.attn = nn.MultiheadAttention(DIM, HEADS, batch_first=True)
        self.ln2 = nn.LayerNorm(DIM)
        self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))

    def forward(self, x, padding_mask):
        h = self.ln1(x)
        attended, _ = self.attn(h, h, h, key_padding_mask=padding_mask, need_weights=False)
        x = x + attended
        x = x + self.mlp(self.ln2(x))
        return x


class TinyTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Parameter(torch.randn(SEQ, DIM) * 0.1)
        self.block = Block()
        self.ln_f = nn.LayerNorm(DIM)
        self.lm_head = nn.Linear(DIM, VOCAB)

    def forward(self, input_ids, attention_mask):
        x = self.embed(input_ids) + self.pos[: input_ids.shape[1]]
        x = self.block(x, attention_mask == 0)  # key_padding_mask: True where padded
        hidden = self.ln_f(x)
        return {"logits": self.lm_head(hidden), "hidden": hidden}


def build_model():
    torch.manual_seed(0)
    return TinyTransformer()


def example_inputs():
    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(0, VOCAB, (2, SEQ), generator=generator)
    attention_mask = torch.ones(2, SEQ, dtype=torch.long)
    attention_mask[1, -2:] = 0  # the second sequence is padded
    return {"input_ids": input_ids, "attention_mask": attention_mask}


def loss_fn(output):
    """Next-token cross-entropy over the unpadded positions."""
    logits = output["logits"][:, :-1]
    inputs = {name: t.to(logits.device) for name, t in example_inputs().items()}  # made on the CPU
    targets = inputs["input_ids"][:, 1:].masked_fill(inputs["attention_mask"][:, 1:] == 0, -100)
    return nn.functional.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1), ignore_index=-100)
