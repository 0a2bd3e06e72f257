"""`HooktuiCallback` for the Hugging Face `Trainer` (README: "Lightning and the Hugging Face
Trainer").

    trainer = Trainer(model, args, train_dataset=data, callbacks=[HooktuiCallback(debug_step=4312)])

The Trainer runs each batch's forward and backward in one method, `Trainer.training_step`
(the compute_loss, then accelerator.backward). A TrainerCallback is not handed the Trainer, so
when training begins the callback finds the Trainer that called it on the call stack (the
Trainer's own frame: `self` is a Trainer whose callbacks hold this one) and wraps that
Trainer's `training_step` (an instance attribute, so a subclass's override is what runs; taken
off when training ends or an exception leaves it). For the step chosen, the call runs under
hooktui (plan.py); with gradient accumulation, the step's first batch is the one shown. The
guard checks each training step's forward and backward (a `with hooktui.guard` around each
`training_step` call); evaluation is not checked. `arm` arms the model (hooktui.arm) from
`on_train_begin` to `on_train_end` (or an exception leaving training_step).
"""

from __future__ import annotations

import sys

try:
    from transformers import TrainerCallback
except ImportError:
    raise ImportError("hooktui.integrations.transformers needs the Hugging Face Trainer: pip install transformers accelerate") from None

from .plan import StepPlan

WHO = "hooktui's Trainer callback"


class HooktuiCallback(TrainerCallback):
    """`debug_step=N`: open the app on step N (`state.global_step` while it runs; without a
    terminal, a trace file). `record_every=K`: record steps 0, K, 2K, ... to trace files
    (hooktui-<pid>-<n>-step<k>.jsonl). `guard=True` (or a dict of hooktui.guard's options):
    stop at the first NaN/Inf, saying where it was born. `arm=True` (or a dict of hooktui.arm's
    options): `hooktui attach PID` can open a step while training runs. `on_quit`: as
    hooktui.debug's."""

    def __init__(self, *, debug_step: int | None = None, record_every: int | None = None, guard: bool | dict = False,
                 on_quit: str = "raise", arm: bool | dict = False) -> None:
        self.plan = StepPlan(WHO, debug_step, record_every, guard, on_quit, arm)
        self._wrapped = None  # (trainer, its own training_step attribute or None)
        self._armed = None  # hooktui.arm's handle while training runs

    def on_train_begin(self, args, state, control, **kwargs):
        plan = self.plan
        if plan.takes_steps or plan.guard_options is not None or plan.arm_options is not None:
            self._wrap(_calling_trainer(self))
        if plan.arm_options is not None and self._armed is None:
            self._armed = plan.arm(kwargs["model"])

    def on_train_end(self, args, state, control, **kwargs):
        self._unwrap()

    def _wrap(self, trainer) -> None:
        self._unwrap()
        plan = self.plan
        own = trainer.__dict__.get("training_step")
        original = trainer.training_step

        def training_step(*args, **kwargs):
            model = args[0] if args else kwargs["model"]
            step = trainer.state.global_step
            mode = plan.mode(step)
            try:
                if mode is not None:
                    return plan.run(model, lambda: original(*args, **kwargs), step, mode)
                if plan.guard_options is None:
                    return original(*args, **kwargs)
                with plan.guard(model, step):
                    return original(*args, **kwargs)
            except BaseException:
                self._unwrap()  # the Trainer (and the model) left as found: no on_train_end will come
                raise

        trainer.training_step = training_step
        self._wrapped = (trainer, own)

    def _unwrap(self) -> None:
        armed, self._armed = self._armed, None
        if armed is not None:
            armed.disarm()
        wrapped, self._wrapped = self._wrapped, None
        if wrapped is None:
            return
        trainer, own = wrapped
        if own is None:
            trainer.__dict__.pop("training_step", None)
        else:
            trainer.training_step = own


def _calling_trainer(callback: HooktuiCallback):
    from transformers import Trainer

    frame = sys._getframe(1)
    while frame is not None:
        candidate = frame.f_locals.get("self")
        if isinstance(candidate, Trainer) and callback in getattr(candidate.callback_handler, "callbacks", ()):
            return candidate
        frame = frame.f_back
    raise RuntimeError(f"{WHO}: no Trainer calling it was found on the call stack "
                       "(give it to a transformers.Trainer: Trainer(..., callbacks=[HooktuiCallback(...)]))")
