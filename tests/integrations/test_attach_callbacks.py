"""`hooktui attach PID` on a Lightning fit armed by HooktuiCallback(arm=True), in a subprocess:
the app, driven with Textual's pilot, opens step 1, steps to fc1's forward (its value checked
against the script's own PyTorch hook), quits, and the fit ends with the parameters and
optimizer state of an unarmed twin, bit for bit. And the Hugging Face callback arms the model
while training runs, and disarms it after."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import json
import time
from pathlib import Path

import pytest
import torch

from hooktui.attach import wire
from hooktui.attach.client import Connection
from hooktui.commands.attach import attached_app, open_step
from armed_lightning_worker import main as twin_fit
from trainer_helpers import wait_for

WORKER = Path(__file__).parent / "armed_lightning_worker.py"
TIMEOUT = 180.0


@pytest.fixture
def runtime_dir(monkeypatch, tmp_path) -> Path:
    """Each test's own folder of armed processes (hooktui.arm's rendezvous), for the workers too."""
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    os.chmod(runtime, 0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    return runtime


def start(folder: Path, *flags: str) -> subprocess.Popen:
    folder.mkdir()
    return subprocess.Popen([sys.executable, str(WORKER), str(folder), *flags])


def pid_of(folder: Path, process: subprocess.Popen) -> int:
    deadline = time.monotonic() + TIMEOUT
    while not (folder / "pid").exists():
        assert process.poll() is None, "the fit ended before it was armed"
        assert time.monotonic() < deadline, "the fit was never armed"
        time.sleep(0.05)
    return int((folder / "pid").read_text())


def test_attach_opens_step_1_of_a_lightning_fit_the_callback_armed(runtime_dir, tmp_path):
    training = start(tmp_path / "armed")
    (tmp_path / "twin").mkdir()
    twin_fit(tmp_path / "twin", armed=False)  # unarmed, here, while the other process starts
    connection = Connection(pid_of(tmp_path / "armed", training))
    opened, first = open_step(connection, wire.Open(step=1), on_waiting=(tmp_path / "armed" / "go").touch)
    assert opened.step == 1
    app = attached_app(connection, opened, first)
    seen = {}

    async def drive():
        async with app.run_test(size=(100, 30), notifications=False) as pilot:
            await wait_for(pilot, lambda: app.state == "paused", "the first pause")
            while not any(e.module == "fc1" and e.hook == "forward" for e in app.history.events):
                n = len(app.history.events)
                await pilot.press("n")
                await wait_for(pilot, lambda: len(app.history.events) > n and app.state == "paused", "the next firing")
            seen["forward"] = next(e for e in app.history.events if e.module == "fc1" and e.hook == "forward")
            await pilot.press("q")

    asyncio.run(drive())
    assert training.wait(TIMEOUT) == 0
    hooks = json.loads((tmp_path / "armed" / "hook.json").read_text())
    output = next(t for t in seen["forward"].tensors if t.name == "output")
    assert sum(output.values) == pytest.approx(hooks["output"][1], rel=1e-5, abs=1e-5)
    armed, plain = torch.load(tmp_path / "armed" / "final.pt"), torch.load(tmp_path / "twin" / "final.pt")
    for name, tensor in armed["params"].items():
        assert torch.equal(tensor, plain["params"][name]), name
    for key, state in armed["optimizer"]["state"].items():
        assert torch.equal(state["momentum_buffer"], plain["optimizer"]["state"][key]["momentum_buffer"])


def test_the_trainer_callback_arms_the_model_while_training_runs(runtime_dir, tmp_path):
    from transformers import TrainerCallback

    from hooktui.integrations.transformers import HooktuiCallback
    from test_transformers import train

    during = []

    class Look(TrainerCallback):
        def on_step_end(self, args, state, control, model=None, **kwargs):
            during.append((len(model._forward_pre_hooks), sorted(p.name for p in runtime_dir.rglob("*") if p.is_socket())))

    model = train(tmp_path, "run", [HooktuiCallback(arm=True), Look()])
    assert len(during) == 3
    assert all(hooks == 1 and sockets for hooks, sockets in during)  # armed: the root's hook, a socket listening
    assert not model._forward_pre_hooks and not any(p.is_socket() for p in runtime_dir.rglob("*"))
