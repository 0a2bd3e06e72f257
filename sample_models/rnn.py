"""A tiny recurrent classifier: an embedding over integer tokens, then one RNNCell called
in a Python loop over the time steps, then a linear head.

What it demonstrates:
- the shared cell is one module called once per time step, so its firings carry call
  numbers 0, 1, 2, 3 in forward, and its backward firings come in reverse (call 3 first);
- the embedding's input is integer token ids: they cannot require grad, so the
  embedding's backward fires early with no grad_input;
- at step 0 the hidden state is a fresh zeros tensor that does not require grad, beside
  an input that does: PyTorch's full backward hook (and hooktui) gives it a zeros grad.

Run it with `hooktui sample_models/rnn.py` or `hooktui trace sample_models/rnn.py`.
"""

import torch
from torch import nn

VOCAB, EMBED, HIDDEN, CLASSES, STEPS = 12, 6, 8, 3, 4


class TinyRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, EMBED)
        self.cell = nn.RNNCell(EMBED, HIDDEN)
        self.head = nn.Linear(HIDDEN, CLASSES)

    def forward(self, tokens):
        x = self.embed(tokens)  # (batch, time, EMBED)
        h = torch.zeros(tokens.shape[0], HIDDEN, device=tokens.device)  # where the model runs
        for t in range(tokens.shape[1]):
            h = self.cell(x[:, t], h)  # the same module, one call per time step
        return self.head(h)


def build_model():
    torch.manual_seed(0)
    return TinyRNN()


def example_inputs():
    generator = torch.Generator().manual_seed(0)
    return torch.randint(0, VOCAB, (2, STEPS), generator=generator)


def loss_fn(output):
    return nn.functional.cross_entropy(output, torch.tensor([0, 2], device=output.device))
