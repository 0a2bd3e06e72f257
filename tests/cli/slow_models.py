"""Models that misbehave in time, for the quitting tests: a 30 s forward (10 minutes with
HOOKTUI_TEST_SLOW=sleep; sleeping, so the GIL is free; it says so if it ever ends) and an
endless loop (holding the GIL but for the interpreter's switches). Each prints as it enters
forward, which the app notices on screen."""

import os
import time

import torch
from torch import nn


class Slow(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(3, 1)

    def forward(self, x):
        print("entering the slow forward")
        if os.environ.get("HOOKTUI_TEST_SLOW") == "loop":
            while True:
                pass
        time.sleep(600 if os.environ.get("HOOKTUI_TEST_SLOW") == "sleep" else 30)
        print("leaving the slow forward")
        return self.fc(x)


model = Slow()
inputs = torch.ones(2, 3)
