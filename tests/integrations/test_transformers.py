"""hooktui's callback in a real Hugging Face `Trainer.train()` of 3 steps on the CPU (a plain
nn.Module the Trainer accepts: no download, report_to="none"): recording every 2nd step,
guarding every step, and debugging step 1 in the app."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F
from transformers import Trainer, TrainingArguments

import hooktui
from hooktui.engine.records.trace_file import read_trace_file
from hooktui.integrations.transformers import HooktuiCallback
from trainer_helpers import (BATCH, STEPS, PlainHooks, assert_nothing_left, assert_recorded_as_plain_hooks_saw,
                             assert_same_parameters, continue_then_quit, features, forward, layers, line_of, step_files,
                             quit_at_first_pause, use_pilot)


class Tiny(nn.Module):
    """What the Trainer calls: keyword inputs with `labels`, a dict with the loss out."""

    def __init__(self) -> None:
        super().__init__()
        self.net = layers()

    def forward(self, x, labels=None):
        logits = forward(self.net, x)
        return {"loss": F.cross_entropy(logits, labels), "logits": logits}


class Rows(torch.utils.data.Dataset):
    def __init__(self, poisoned_batch=None) -> None:
        self.x, self.y = features(poisoned_batch)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i):
        return {"x": self.x[i], "labels": self.y[i]}


def train(tmp_path, name: str, callbacks=(), poisoned_batch=None, plain_hooks: list | None = None) -> Tiny:
    torch.manual_seed(0)
    model = Tiny()
    if plain_hooks is not None:
        plain_hooks.append(PlainHooks(model.net))
    args = TrainingArguments(output_dir=str(tmp_path / name), max_steps=STEPS, per_device_train_batch_size=BATCH,
                             learning_rate=0.5, report_to="none", use_cpu=True, save_strategy="no",
                             logging_strategy="no", disable_tqdm=True, dataloader_num_workers=0, seed=0)
    Trainer(model=model, args=args, train_dataset=Rows(poisoned_batch), callbacks=list(callbacks)).train()
    return model


def test_record_every_2nd_step_writes_steps_0_and_2_as_plain_hooks_see_them(tmp_path):
    hooks = []
    reference = train(tmp_path, "plain", plain_hooks=hooks)  # the same training with PyTorch's own hooks only
    plain = hooks[0]
    assert len(plain.outputs) == STEPS

    model = train(tmp_path, "run", [HooktuiCallback(record_every=2)])
    files = step_files(tmp_path)
    assert sorted(files) == [0, 2]
    for step, path in files.items():
        assert_recorded_as_plain_hooks_saw(path, "net.fc1", plain.outputs[step], plain.grad_outputs[step])
        assert read_trace_file(path).info.model == f"Tiny (hooktui's Trainer callback, step {step})"
    assert_same_parameters(model, reference)  # recording changed nothing of the training
    assert_nothing_left(model)


def test_guard_stops_at_the_step_whose_nan_is_born_in_the_log(tmp_path):
    # The Trainer shuffles: plain hooks say at which step the poisoned batch reaches the log.
    hooks = []
    train(tmp_path, "plain", poisoned_batch=0, plain_hooks=hooks)
    first = hooks[0].log_finite.index(False)
    assert first > 0  # a step after the first: its number is the Trainer's, not the guard's own count
    with pytest.raises(hooktui.NonFiniteError) as caught:
        train(tmp_path, "run", [HooktuiCallback(guard=True)], poisoned_batch=0)
    error = caught.value
    assert error.step == first
    assert (error.born.phase, error.born.module, error.born.tensor) == ("forward", "net.log", "output")
    assert "It is called at " + line_of("return net[") in str(error)
    assert read_trace_file(error.trace_path).info.model == f"Tiny (hooktui.guard at hooktui's Trainer callback, step {first})"


def test_debug_step_1_opens_the_app_and_the_training_ends_as_without_it(monkeypatch, tmp_path):
    opened = []
    use_pilot(monkeypatch, continue_then_quit, opened)
    model = train(tmp_path, "run", [HooktuiCallback(debug_step=1)])
    assert len(opened) == 1
    app = opened[0]
    assert app.state == "finished" and "step 1" in app.call_site
    assert {(e.hook, e.module) for e in app.history.events} >= {("forward", "net.fc1"), ("param_grad", "net.fc1")}
    assert list(tmp_path.glob("*.jsonl")) == []  # the app, not a file
    twin = train(tmp_path, "twin")
    assert_same_parameters(model, twin)
    assert_nothing_left(model)


def test_q_before_the_step_ended_raises_quit_out_of_train_and_leaves_nothing(monkeypatch, tmp_path):
    opened = []
    use_pilot(monkeypatch, quit_at_first_pause, opened)
    torch.manual_seed(0)
    model = Tiny()
    args = TrainingArguments(output_dir=str(tmp_path / "run"), max_steps=STEPS, per_device_train_batch_size=BATCH,
                             report_to="none", use_cpu=True, save_strategy="no", logging_strategy="no", disable_tqdm=True)
    trainer = Trainer(model=model, args=args, train_dataset=Rows(), callbacks=[HooktuiCallback(debug_step=0)])
    with pytest.raises(hooktui.Quit):
        trainer.train()
    assert len(opened) == 1 and trainer.state.global_step == 0
    assert "training_step" not in trainer.__dict__  # the wrapper is gone
    assert_nothing_left(model)
