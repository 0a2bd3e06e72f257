"""`hooktui attach PID`: a training script in a subprocess arms its model; the app, driven
here with Textual's pilot, opens a step of it, steps forward and backward (each value checked
against the script's own plain PyTorch hooks), quits, and the script trains on to the same
parameters and optimizer state, bit for bit, as an unarmed twin."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from hooktui.attach import wire
from hooktui.attach.client import Connection
from hooktui.commands.attach import attached_app, open_step

WORKER = Path(__file__).parent / "attach_worker.py"
TIMEOUT = 120.0


def start(folder: Path, *flags: str) -> subprocess.Popen:
    folder.mkdir(exist_ok=True)
    return subprocess.Popen([sys.executable, str(WORKER), str(folder), *flags])


def pid_of(folder: Path, process: subprocess.Popen) -> int:
    deadline = time.monotonic() + TIMEOUT
    while not (folder / "pid").exists():
        assert process.poll() is None, "the training script ended before it armed"
        assert time.monotonic() < deadline, "the training script never armed"
        time.sleep(0.05)
    return int((folder / "pid").read_text())


def finished(process: subprocess.Popen) -> None:
    assert process.wait(TIMEOUT) == 0


def same_training(a: Path, b: Path) -> None:
    first, second = torch.load(a / "final.pt"), torch.load(b / "final.pt")
    for name, tensor in first["params"].items():
        assert torch.equal(tensor, second["params"][name]), name
    for key, state in first["optimizer"]["state"].items():
        assert torch.equal(state["momentum_buffer"], second["optimizer"]["state"][key]["momentum_buffer"])


async def wait_for(pilot, predicate, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}: state={pilot.app.state}"
        await pilot.pause(0.02)


def test_attach_steps_through_a_running_training_and_leaves_it_as_it_was(tmp_path):
    twin = start(tmp_path / "twin", "--no-arm")
    training = start(tmp_path / "armed")
    pid = pid_of(tmp_path / "armed", training)
    connection = Connection(pid)
    assert connection.welcome.step == 0
    # The training starts once the process has taken the request.
    opened, first = open_step(connection, wire.Open(step=2), on_waiting=(tmp_path / "armed" / "go").touch)
    assert opened.step == 2
    app = attached_app(connection, opened, first)
    seen: dict = {}

    async def drive():
        async with app.run_test(size=(100, 30), notifications=False) as pilot:
            await wait_for(pilot, lambda: app.state == "paused", "the first pause")
            seen["first"] = (app.history.events[0].hook, app.history.events[0].module)
            while not any(e.module == "fc1" and e.hook == "forward" for e in app.history.events):
                n = len(app.history.events)
                await pilot.press("n")
                await wait_for(pilot, lambda: len(app.history.events) > n and app.state == "paused", "a step")
            seen["forward"] = next(e for e in app.history.events if e.module == "fc1" and e.hook == "forward")
            def weight_grad():
                return next((e for e in app.history.events if e.hook == "param_grad" and e.module == "fc1"
                             and e.tensors[0].name == "weight.grad"), None)

            while weight_grad() is None:
                n = len(app.history.events)
                await pilot.press("n")
                await wait_for(pilot, lambda: len(app.history.events) > n and app.state in ("paused", "finished"), "a step")
            seen["grad"] = weight_grad()
            await pilot.press("q")

    import asyncio

    asyncio.run(drive())
    finished(training)
    finished(twin)
    hooks = json.loads((tmp_path / "armed" / "hook.json").read_text())
    assert seen["first"] == ("forward_pre", "")  # the root's own forward_pre, fired by hand
    output = next(t for t in seen["forward"].tensors if t.name == "output")
    assert sum(output.values) == pytest.approx(hooks["output"][2], rel=1e-5, abs=1e-5)
    weight = seen["grad"].tensors[0]
    assert sum(weight.values) == pytest.approx(hooks["weight_grad"][2], rel=1e-5, abs=1e-5)
    same_training(tmp_path / "armed", tmp_path / "twin")
