"""An Accelerate loop is the user's own: `hooktui.debug` takes a step that calls
`accelerator.backward` itself and returns None (README: "Lightning and the Hugging Face
Trainer"). Without a terminal the step goes to a trace file, with the values PyTorch's own
hooks see, and the loop trains as without it."""

from __future__ import annotations

import pytest
import torch
from accelerate import Accelerator
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

import hooktui
import hooktui.loop.where
from trainer_helpers import (BATCH, PlainHooks, assert_nothing_left, assert_recorded_as_plain_hooks_saw,
                             assert_same_parameters, features, forward, layers)


class Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = layers()

    def forward(self, x):
        return forward(self.net, x)


def train(debug_step: int | None = None, plain_hooks: list | None = None):
    torch.manual_seed(0)
    model = Tiny()
    if plain_hooks is not None:
        plain_hooks.append(PlainHooks(model.net))
    accelerator = Accelerator(cpu=True)
    prepared, optimizer, data = accelerator.prepare(model, torch.optim.SGD(model.parameters(), lr=0.5),
                                                    DataLoader(TensorDataset(*features()), batch_size=BATCH))
    returned = []
    for step, (x, y) in enumerate(data):
        optimizer.zero_grad()

        def train_step():
            accelerator.backward(F.cross_entropy(prepared(x), y))

        if step == debug_step:
            returned.append(hooktui.debug(prepared, train_step))
        else:
            train_step()
        optimizer.step()
    return model, returned


def test_a_step_that_runs_accelerator_backward_is_recorded_as_plain_hooks_see_it(monkeypatch, tmp_path):
    monkeypatch.setattr(hooktui.loop.where, "terminal_attached", lambda: False)
    hooks = []
    reference, _ = train(plain_hooks=hooks)
    model, returned = train(debug_step=1)
    assert returned == [None]  # the step ran its own backward and returned no loss
    (path,) = tmp_path.glob("hooktui-*.jsonl")
    assert_recorded_as_plain_hooks_saw(path, "net.fc1", hooks[0].outputs[1], hooks[0].grad_outputs[1])
    assert_same_parameters(model, reference)
    assert_nothing_left(model)


def test_the_guard_around_an_accelerate_loop_names_the_log():
    torch.manual_seed(0)
    model = Tiny()
    accelerator = Accelerator(cpu=True)
    prepared, optimizer, data = accelerator.prepare(model, torch.optim.SGD(model.parameters(), lr=0.5),
                                                    DataLoader(TensorDataset(*features(poisoned_batch=2)), batch_size=BATCH))
    with pytest.raises(hooktui.NonFiniteError) as caught, hooktui.guard(prepared):
        for x, y in data:
            optimizer.zero_grad()
            accelerator.backward(F.cross_entropy(prepared(x), y))
            optimizer.step()
    assert caught.value.step == 2 and caught.value.born.module == "net.log"
