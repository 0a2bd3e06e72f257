"""An armed model trained on a thread of this process, attached from another: after a quit
mid-step the step runs to its end and no hook of hooktui's is left, on the model, on its
parameters or in torch.autograd."""

from __future__ import annotations

import os
import threading
import time

import torch
from torch import nn

import hooktui
from hooktui.attach import wire
from hooktui.attach.client import Connection
from hooktui.commands.attach import open_step

TIMEOUT = 60.0


def hooks_of(model: nn.Module) -> list:
    modules = [(name, attr, key, fn) for name, module in model.named_modules()
               for attr in ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks")
               for key, fn in getattr(module, attr).items()]
    params = [(name, dict(p._backward_hooks or {}), dict(getattr(p, "_post_accumulate_grad_hooks", None) or {}))
              for name, p in model.named_parameters()]
    return [modules, params, torch.autograd.backward, torch.autograd.grad, torch.Tensor.register_hook]


def test_quit_mid_step_leaves_no_hook_and_the_loop_goes_on():
    model = nn.Sequential(nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 1))
    before = hooks_of(model)
    handle = hooktui.arm(model)
    stop = threading.Event()
    steps = []

    def train() -> None:
        while not stop.is_set():
            model(torch.ones(4, 2)).sum().backward()
            steps.append(handle.steps)

    connection = Connection(os.getpid())
    trainer = threading.Thread(target=train, daemon=True)
    opened, _ = open_step(connection, wire.Open(), on_waiting=trainer.start)
    pauses = 0
    try:
        while pauses < 2:
            message = connection.read()
            if isinstance(message, wire.State) and message.state == "paused":
                pauses += 1
                connection.send(wire.Go(how="step"))
    except BaseException:
        stop.set()  # the loop ends after the step it is in
        raise
    connection.send(wire.Quit())
    connection.close()
    deadline = time.monotonic() + TIMEOUT
    while handle.step is not None or len(steps) < opened.step + 3:
        assert time.monotonic() < deadline, "the training did not go on after the attacher quit"
        time.sleep(0.01)
    stop.set()
    trainer.join(TIMEOUT)
    handle.disarm()
    assert hooks_of(model) == before
