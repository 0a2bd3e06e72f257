"""hooktui's Lightning callback in a real `lightning.Trainer.fit` of 3 steps on the CPU:
recording every 2nd step, guarding every step, and debugging step 1 in the app."""

from __future__ import annotations

import asyncio

import lightning.pytorch as L
import pytest
import torch
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

import hooktui
from hooktui.engine.records.trace_file import read_trace_file
from hooktui.integrations.lightning import HooktuiCallback
from trainer_helpers import (BATCH, STEPS, PlainHooks, assert_nothing_left, assert_recorded_as_plain_hooks_saw,
                             assert_same_parameters, continue_then_quit, features, forward, layers, line_of, step_files,
                             quit_at_first_pause, use_pilot)


class Tiny(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = layers()

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(forward(self.net, x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.5, momentum=0.9)


def fit(callbacks=(), poisoned_batch=None, root=None, plain_hooks: list | None = None) -> Tiny:
    L.seed_everything(0, verbose=False)
    model = Tiny()
    if plain_hooks is not None:
        plain_hooks.append(PlainHooks(model.net))
    data = DataLoader(TensorDataset(*features(poisoned_batch)), batch_size=BATCH, shuffle=False)
    trainer = L.Trainer(max_steps=STEPS, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, default_root_dir=root,
                        callbacks=list(callbacks))
    trainer.fit(model, data)
    return model


def test_record_every_2nd_step_writes_steps_0_and_2_as_plain_hooks_see_them(tmp_path):
    hooks = []
    reference = fit(root=tmp_path / "plain", plain_hooks=hooks)  # the same fit with PyTorch's own hooks only
    plain = hooks[0]
    assert len(plain.outputs) == STEPS

    model = fit([HooktuiCallback(record_every=2)], root=tmp_path / "run")
    files = step_files(tmp_path)
    assert sorted(files) == [0, 2]
    for step, path in files.items():
        assert_recorded_as_plain_hooks_saw(path, "net.fc1", plain.outputs[step], plain.grad_outputs[step])
    assert_same_parameters(model, reference)  # recording changed nothing of the training
    assert_nothing_left(model)


def test_guard_stops_at_the_nan_born_in_the_log_at_step_1(tmp_path):
    with pytest.raises(hooktui.NonFiniteError) as caught:
        fit([HooktuiCallback(guard=True)], poisoned_batch=1, root=tmp_path / "run")
    error = caught.value
    assert error.step == 1
    assert (error.born.phase, error.born.module, error.born.tensor) == ("forward", "net.log", "output")
    # Its input has no autograd history, so the line is the module's call in the step.
    assert "It is called at " + line_of("return net[") in str(error)
    assert read_trace_file(error.trace_path).info.model == "Tiny (hooktui.guard at hooktui's Lightning callback, step 1)"
    # The guard is gone with the fit: a second one on another model can start.
    with hooktui.guard(torch.nn.Linear(2, 2)):
        pass


def test_guard_and_record_together_step_0_recorded_then_the_stop_at_step_1(tmp_path):
    with pytest.raises(hooktui.NonFiniteError) as caught:
        fit([HooktuiCallback(guard=True, record_every=2)], poisoned_batch=1, root=tmp_path / "run")
    assert caught.value.step == 1 and caught.value.born.module == "net.log"
    recorded = step_files(tmp_path.glob("*-step*.jsonl"))
    assert sorted(recorded) == [0]  # the guard took back the model after the recorded step


def test_debug_step_1_opens_the_app_and_the_fit_ends_as_without_it(monkeypatch, tmp_path):
    opened = []
    use_pilot(monkeypatch, continue_then_quit, opened)
    model = fit([HooktuiCallback(debug_step=1)], root=tmp_path / "run")
    assert len(opened) == 1
    app = opened[0]
    assert app.state == "finished" and "step 1" in app.call_site
    assert {(e.hook, e.module) for e in app.history.events} >= {("forward", "net.fc1"), ("param_grad", "net.fc1")}
    assert list(tmp_path.glob("*.jsonl")) == []  # the app, not a file
    twin = fit(root=tmp_path / "twin")
    assert_same_parameters(model, twin)
    assert_nothing_left(model)


class Manual(Tiny):
    def __init__(self) -> None:
        super().__init__()
        self.automatic_optimization = False


def test_debug_with_manual_optimization_is_refused_with_what_to_do(tmp_path):
    data = DataLoader(TensorDataset(*features()), batch_size=BATCH)
    trainer = L.Trainer(max_epochs=1, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, default_root_dir=tmp_path,
                        callbacks=[HooktuiCallback(debug_step=1)])
    with pytest.raises(RuntimeError, match="need automatic optimization .* call hooktui.debug in your training_step"):
        trainer.fit(Manual(), data)


def test_q_before_the_step_ended_raises_quit_out_of_fit_and_leaves_nothing(monkeypatch, tmp_path):
    opened = []
    use_pilot(monkeypatch, quit_at_first_pause, opened)
    L.seed_everything(0, verbose=False)
    model = Tiny()
    trainer = L.Trainer(max_steps=STEPS, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, default_root_dir=tmp_path,
                        callbacks=[HooktuiCallback(debug_step=0)])
    with pytest.raises(hooktui.Quit):
        trainer.fit(model, DataLoader(TensorDataset(*features()), batch_size=BATCH))
    assert len(opened) == 1 and trainer.global_step == 0
    assert "optimizer_step" not in model.__dict__  # the wrapper is gone
    assert_nothing_left(model)
