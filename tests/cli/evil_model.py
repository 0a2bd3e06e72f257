"""A model whose module names and printed output misbehave: escape sequences in a module
name, prints in forward and in a hook (for the `trace` table, --json and the app)."""

import torch
from torch import nn

TITLE = "\x1b]0;pwned-title\x07"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.add_module("fc" + TITLE, nn.Linear(3, 2))

    def forward(self, x):
        print("model print in forward")
        return getattr(self, "fc" + TITLE)(x)


model = Net()
model.register_forward_hook(lambda module, args, output: print("hook print"))
inputs = torch.ones(2, 3)
