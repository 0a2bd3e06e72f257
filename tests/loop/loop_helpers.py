"""Helpers for the tests of hooktui inside a training loop: small models, plain-torch
reference steps, and the app of `hooktui.debug` driven by Textual's pilot instead of a
terminal."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import torch
from torch import nn

import hooktui.loop.in_app
import hooktui.loop.where

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_models"
TIMEOUT = 60.0  # a safety net: waits end as soon as their condition holds


class Net(nn.Module):
    """Linear, BatchNorm (buffers move in a training step), Dropout (draws random numbers),
    an in-place ReLU, and a hook of the model's own."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.bn = nn.BatchNorm1d(8)
        self.act = nn.ReLU(inplace=True)
        self.drop = nn.Dropout(0.25)
        self.fc2 = nn.Linear(8, 3)
        self.seen = []
        self.fc2.register_forward_hook(lambda m, a, o: self.seen.append(tuple(o.shape)))

    def forward(self, x):
        return self.fc2(self.drop(self.act(self.bn(self.fc1(x)))))


def net_and_twin() -> tuple[Net, Net]:
    """Two identical Nets (each with its own hook: a deepcopy would share the hook's `self`)."""
    torch.manual_seed(0)
    net = Net()
    torch.manual_seed(0)
    return net, Net()


def batch(seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(5, 6, generator=generator), torch.randint(0, 3, (5,), generator=generator)


def assert_same_state(model: nn.Module, reference: nn.Module) -> None:
    """Parameters, .grad and buffers equal exactly (plain torch's step vs hooktui's)."""
    for (name, p), (_, q) in zip(model.named_parameters(), reference.named_parameters(), strict=True):
        assert torch.equal(p, q), f"parameter {name} differs"
        assert (p.grad is None) == (q.grad is None), f".grad of {name}: one is None"
        if p.grad is not None:
            assert torch.equal(p.grad, q.grad), f".grad of {name} differs: max |diff| {(p.grad - q.grad).abs().max()}"
    for (name, b), (_, c) in zip(model.named_buffers(), reference.named_buffers(), strict=True):
        assert torch.equal(b, c), f"buffer {name} differs"


def hook_dicts(model: nn.Module) -> list:
    """Every hook a module carries: (module, dict, key, function)."""
    return [
        (name, attr, key, fn)
        for name, module in model.named_modules()
        for attr in ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks")
        for key, fn in getattr(module, attr).items()
    ]


def tensor_hooks(model: nn.Module) -> list:
    return [(name, dict(p._backward_hooks or {}), dict(getattr(p, "_post_accumulate_grad_hooks", None) or {}))
            for name, p in model.named_parameters()]


async def wait_for(pilot, predicate: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not predicate():
        if time.monotonic() > deadline:
            app = pilot.app
            raise AssertionError(f"timed out waiting for {what}: state={app.state} n={len(app.history)}")
        await pilot.pause(0.01)


def use_pilot(monkeypatch, script: Callable[[object], Awaitable[None]], opened: list | None = None) -> None:
    """Make `hooktui.debug` believe a terminal is attached, and run its app under Textual's
    pilot with `script(pilot)` instead of on the terminal."""

    def open_app(app) -> None:
        if opened is not None:
            opened.append(app)

        async def drive() -> None:
            async with app.run_test(size=(80, 24), notifications=False) as pilot:
                await script(pilot)

        asyncio.run(drive())

    monkeypatch.setattr(hooktui.loop.where, "terminal_attached", lambda: True)
    monkeypatch.setattr(hooktui.loop.in_app, "open_app", open_app)


async def continue_then_quit(pilot) -> None:
    """`c` to the end of the step, then `q` (the step done: debug returns)."""
    app = pilot.app
    await wait_for(pilot, lambda: app.state == "paused", "the first pause")
    await pilot.press("c")
    await wait_for(pilot, lambda: app.state in ("finished", "failed"), "the end of the step")
    await pilot.press("q")


async def quit_at_first_pause(pilot) -> None:
    app = pilot.app
    await wait_for(pilot, lambda: app.state == "paused", "the first pause")
    await pilot.press("q")
