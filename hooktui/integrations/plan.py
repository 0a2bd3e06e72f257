"""What a trainer callback does at each step, whatever the trainer: debug step N (the app,
as `hooktui.debug`), record every K-th step to a trace file (as `debug` without a terminal),
guard every step for the first NaN/Inf (as `hooktui.guard`), and arm the model for
`hooktui attach PID` while it trains (as `hooktui.arm`).

Steps are numbered as the trainer numbers them: its `global_step` while the step runs (the
optimizer steps taken before it), so the first step is step 0. The trainer's own loop runs the
forward and backward; the callback hands hooktui a callable that runs them (Lightning: the
optimizer's closure; the Hugging Face Trainer: its `training_step`), which runs its own
backward, so hooktui calls none (loop/debug.py's trainer_step).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

ON_QUIT = ("raise", "return")


class StepPlan:
    def __init__(self, who: str, debug_step: int | None, record_every: int | None, guard: bool | dict,
                 on_quit: str, arm: bool | dict = False) -> None:
        if debug_step is not None and (isinstance(debug_step, bool) or not isinstance(debug_step, int) or debug_step < 0):
            raise ValueError(f"{who}: debug_step must be a step number (0 or more), got {debug_step!r}")
        if record_every is not None and (isinstance(record_every, bool) or not isinstance(record_every, int)
                                         or record_every < 1):
            raise ValueError(f"{who}: record_every must be a whole number of steps (1 or more), got {record_every!r}")
        if not isinstance(guard, (bool, dict)):
            raise TypeError(f"{who}: guard must be True, False or a dict of hooktui.guard's options, got {type(guard).__name__}")
        if not isinstance(arm, (bool, dict)):
            raise TypeError(f"{who}: arm must be True, False or a dict of hooktui.arm's options, got {type(arm).__name__}")
        if on_quit not in ON_QUIT:
            raise ValueError(f"{who}: on_quit must be one of {ON_QUIT}, got {on_quit!r}")
        self.who = who
        self.debug_step = debug_step
        self.record_every = record_every
        self.guard_options = ({} if guard is True else dict(guard)) if guard is not False else None
        self.on_quit = on_quit
        self.arm_options = ({} if arm is True else dict(arm)) if arm is not False else None
        self.done: set[int] = set()  # steps debugged or recorded already (one batch each)

    @property
    def takes_steps(self) -> bool:
        """Debug or record mode: the callback needs the trainer's step as a callable."""
        return self.debug_step is not None or self.record_every is not None

    def mode(self, step: int) -> str | None:
        """"debug", "record" or None for this step; each step once (its first batch)."""
        if step in self.done:
            return None
        if step == self.debug_step:
            return "debug"
        if self.record_every is not None and step % self.record_every == 0:
            return "record"
        return None

    def run(self, model: nn.Module, step_fn: Callable[[], Any], step: int, mode: str) -> Any:
        """Run `step_fn` (the trainer's forward and backward; it returns the loss, detached,
        or what the trainer's step returns) under hooktui and return what it returned."""
        from ..loop.debug import trainer_step

        self.done.add(step)
        returned: list = []
        losses: list = []

        def run_step() -> None:
            value = step_fn()
            returned.append(value)
            if isinstance(value, torch.Tensor) and value.numel() == 1:
                losses.append(value)

        what = "recorded" if mode == "record" else "debugged"
        trainer_step(model, run_step, losses, record=mode == "record", site=f"{self.who}, step {step}",
                     loss_label=f"the loss of the trainer's step ({what} by {self.who}; the trainer ran its own backward)",
                     tag=f"step{step}", on_quit=self.on_quit)
        return returned[0]

    def guard(self, model: nn.Module, step: int):
        """A hooktui.guard on `model` (not entered), its errors naming the trainer's step."""
        from ..loop.guard import guard

        watch = guard(model, **self.guard_options)
        watch.call_site = self.who
        watch.step = step
        return watch

    def arm(self, model: nn.Module):
        """hooktui.arm on `model`, labelled as the trainer's; its handle (`disarm()`)."""
        from ..loop.arm import arm

        return arm(model, **{"label": f"{type(model).__name__} ({self.who})", **self.arm_options})
