"""Once `record`, `guard` or `debug` (no terminal: the step goes to a trace file) is done,
nothing of hooktui's holds the user's model: dropping it frees it. (A DDP or FSDP model
kept alive keeps its process group and gloo's threads alive until interpreter teardown.)"""

from __future__ import annotations

import gc
import weakref

import pytest
import torch
from torch import nn

import hooktui


def step(kind: str, model: nn.Module, x: torch.Tensor) -> None:
    if kind == "record":
        hooktui.record(model, x, lambda out: out.sum())
    elif kind == "guard":
        with hooktui.guard(model):
            model(x).sum().backward()
    else:
        hooktui.debug(model, lambda: model(x).sum())


@pytest.mark.parametrize("kind", ["record", "guard", "debug"])
def test_the_model_is_freed_once_hooktui_is_done(kind):
    model = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 1))
    step(kind, model, torch.randn(2, 4))
    held = weakref.ref(model)
    del model
    gc.collect()
    assert held() is None
