"""The Lightning callback's work, for both packages Lightning ships as (`lightning.pytorch`
and `pytorch_lightning`: lightning.py and pytorch_lightning.py give each its Callback class).
Nothing here imports Lightning.

Debug and record need the step as one callable: in automatic optimization that is the
optimizer's closure (training_step, zero_grad, backward), which Lightning hands to the
LightningModule's `optimizer_step` hook. For the step chosen, the callback wraps that hook on
the module (an instance attribute, taken off again as soon as it has run) so that the
closure's first call runs under hooktui on the app's model thread; the optimizer's own step,
gradient clipping and `on_before_optimizer_step` run after it, as without hooktui. With
`accumulate_grad_batches`, Lightning calls the closures of the other batches of the step
directly: the step's last batch (the one the optimizer steps after) is the one shown.

`arm` arms the LightningModule (hooktui.arm) from `on_train_start` to the end of the fit (or
its exception): arm counts a step at each call of the module itself with grad, so
`hooktui attach` sees the steps of a training_step that calls `self(x)`.

The guard is entered when training starts and left when it ends (or fails), as a `with`
block around the loop would be; each batch (training or validation) ends a guard step, so
that a forward that calls submodules only (no call of the LightningModule itself) still ends one.
"""

from __future__ import annotations

from typing import Any

from .plan import StepPlan

WHO = "hooktui's Lightning callback"


class LightningHooks:
    """Mixed into a Lightning Callback class (lightning.py)."""

    def __init__(self, *, debug_step: int | None = None, record_every: int | None = None, guard: bool | dict = False,
                 on_quit: str = "raise", arm: bool | dict = False) -> None:
        super().__init__()
        self.plan = StepPlan(WHO, debug_step, record_every, guard, on_quit, arm)
        self._guard = None
        self._armed = None  # hooktui.arm's handle while the fit runs
        self._wrapped = None  # the module whose optimizer_step is wrapped now

    # -- the guard: the whole fit ---------------------------------------------------------
    def on_train_start(self, trainer, pl_module) -> None:
        if self.plan.takes_steps and not pl_module.automatic_optimization:
            raise RuntimeError(
                f"{WHO}: debug_step and record_every need automatic optimization (the optimizer's closure is the step); "
                "with manual optimization call hooktui.debug in your training_step")
        if self.plan.guard_options is not None and self._guard is None:
            watch = self.plan.guard(pl_module, trainer.global_step)
            watch.__enter__()
            self._guard = watch
        if self.plan.arm_options is not None and self._armed is None:
            self._armed = self.plan.arm(pl_module)

    def on_train_batch_start(self, trainer, pl_module, batch: Any, batch_idx: int) -> None:
        step = trainer.global_step
        if self._guard is not None:
            self._guard.step = step  # its errors say the trainer's step
        if self._wrapped is None and self.plan.mode(step) is not None:
            self._wrap(pl_module, step)

    def on_train_batch_end(self, trainer, pl_module, outputs: Any, batch: Any, batch_idx: int) -> None:
        self._end_guard_step()

    def on_validation_batch_end(self, trainer, pl_module, outputs: Any, batch: Any, batch_idx: int,
                                dataloader_idx: int = 0) -> None:
        self._end_guard_step()

    def on_train_end(self, trainer, pl_module) -> None:
        self._unwrap()
        self._disarm()
        self._leave_guard(None)

    def on_exception(self, trainer, pl_module, exception: BaseException) -> None:
        self._unwrap()
        self._disarm()
        self._leave_guard(exception)

    def teardown(self, trainer, pl_module, stage: str) -> None:
        self._unwrap()
        self._disarm()
        self._leave_guard(None)

    def _disarm(self) -> None:
        armed, self._armed = self._armed, None
        if armed is not None:
            armed.disarm()

    def _end_guard_step(self) -> None:
        # A step whose backward ended it has no firings left: nothing to end (no second restart).
        if self._guard is not None and self._guard.events:
            self._guard.step_ended()

    def _leave_guard(self, exception: BaseException | None) -> None:
        watch, self._guard = self._guard, None
        if watch is None:
            return
        if exception is None:
            watch.__exit__(None, None, None)
        else:
            watch.__exit__(type(exception), exception, exception.__traceback__)

    # -- debug and record: one step's closure ------------------------------------------------
    def _wrap(self, pl_module, step: int) -> None:
        plan = self.plan
        own = pl_module.__dict__.get("optimizer_step")  # an instance attribute already there: put back after
        original = pl_module.optimizer_step

        def optimizer_step(epoch, batch_idx, optimizer, optimizer_closure=None, *args, **kwargs):
            self._unwrap()
            mode = plan.mode(step)
            if optimizer_closure is None or mode is None:
                return original(epoch, batch_idx, optimizer, optimizer_closure, *args, **kwargs)
            first = [True]

            def closure(*cargs, **ckwargs):
                if not first[0]:  # an optimizer that calls it again (LBFGS): as without hooktui
                    return optimizer_closure(*cargs, **ckwargs)
                first[0] = False
                return plan.run(pl_module, lambda: optimizer_closure(*cargs, **ckwargs), step, mode)

            return original(epoch, batch_idx, optimizer, closure, *args, **kwargs)

        pl_module.optimizer_step = optimizer_step
        self._wrapped = (pl_module, own)

    def _unwrap(self) -> None:
        wrapped, self._wrapped = self._wrapped, None
        if wrapped is None:
            return
        pl_module, own = wrapped
        if own is None:
            pl_module.__dict__.pop("optimizer_step", None)
        else:
            pl_module.optimizer_step = own
