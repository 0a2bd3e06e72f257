"""One step of the user's own loop, traced from inside its root call (`hooktui.arm`).

A Session runs the forward and the backward itself; here the user's loop does, and
hooktui only learns that a step starts when the armed root's forward pre-hook runs. By then
PyTorch has taken that call's pre-hooks: `begin()` installs the tracer (every module's
hooks, as a Session's) and fires the root's forward_pre by hand (Tracer.fire_root_pre); the
root's forward post-hooks are read after its forward, so they are the tracer's own. The
step ends when its outermost backward ends (the tracer's `on_backward_end`), or at the
root's return when no graph was made (a forward under no_grad), or when the next root
forward starts with no backward in between (`end()` from the caller).

Pausing is the Gate's, as in a Session: the thread that fires (the training thread; on CUDA
autograd's worker in backward) waits in `gate.check` until told to go on. Nothing here ever
raises into the user's step: `Gate.quit` (which raises QuitRequested) is never used, a
detach is `gate.run_to_end()` and the step goes on, unpaused, to its end, where every hook
comes off. What the hooks see is never changed (the tracer's contract): the step computes
bitwise what it computes without hooktui.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from ..capture.model_walk import ModelWalk
from ..records.ranks import ranked
from ..records.records import Event, TraceInfo
from ..summaries import lazy_stats
from ..summaries.stats import StatsOptions
from .gate import Gate
from .lifecycle import LiveFiring, TracedRun
from .one_run import claimed
from .session import describe_modules

__all__ = ["ArmedStep"]


class ArmedStep:
    """The hooks of one step, from `begin()` (inside the root's pre-hook) to `end()`.

    Listeners, each called on the thread that fires: `on_event(event)` for every firing,
    `on_state(state)` for running / paused / finished, `on_backward(roots)` when the step's
    backward starts (before any of its firings), `on_pause(event)` just before the gate
    blocks (it may release the gate again: `gate.run_to_end()`)."""

    def __init__(self, model: nn.Module, *, label: str, number: int, options: StatsOptions | None = None) -> None:
        self.model = model
        self.number = number  # the step's number, counted by hooktui.arm
        self.gate = Gate(pause=True)
        self.options = options or StatsOptions()
        self.walk = ModelWalk(model)
        self.info = TraceInfo(
            model=label,
            modules=describe_modules(model, self.walk),
            loss="the loss your loop's backward started from",
            device=next((str(p.device) for _, p in self.walk.params), "cpu"),
            torch_version=str(torch.__version__),
            **ranked(),
        )
        self.events: list[Event] = []
        self.state = "ready"
        self.current: LiveFiring | None = None
        self.loss: torch.Tensor | None = None
        self.output: Any = None
        self.final_grads: dict[str, torch.Tensor] = {}
        self.on_event: Callable[[Event], None] | None = None
        self.on_state: Callable[[str], None] | None = None
        self.on_backward: Callable[[list], None] | None = None
        self.on_pause: Callable[[Event], None] | None = None
        self._run: TracedRun | None = None
        self._root_handle = None
        self._claim = None
        self._backwards: list[bool] = []
        self._lock = threading.RLock()

    @property
    def hunting(self) -> bool:
        return self.gate.breakpoint_list.has_kind("nonfinite")

    @property
    def in_backward(self) -> bool:
        return self._run is not None and self._run.tracer.phase == "backward"

    # -- the step's start and end (the training thread) ------------------------------------
    def begin(self, args: tuple, kwargs: dict):
        """Inside the root's forward pre-hook: every hook on, the root's forward_pre fired.
        Returns what a pre-hook with kwargs returns (None, or new (args, kwargs))."""
        claim = claimed("arm")
        claim.__enter__()  # refused (ConcurrentRunError) while another thread's run is on
        self._claim = claim
        run = self._run = TracedRun(self.model, self._emit, self.options, walk=self.walk, legacy=False, param_grads=True,
                                    on_backward_start=self._backward_started, on_backward_end=self._backward_ended)
        run.begin()
        try:
            run.install()
            # After the tracer's: it runs after the tracer's own root post-hook.
            self._root_handle = self.model.register_forward_hook(self._root_returned, always_call=True)
            run.tracer.hunting = self.hunting
            if run.tracer.hunting:
                run.note_creation_lines()
            self._set_state("running")
            return run.tracer.fire_root_pre(args, kwargs)
        except BaseException:
            self.end("failed")
            raise

    def end(self, state: str = "finished") -> None:
        """Every hook off (whatever happens), the step's records kept. Idempotent."""
        with self._lock:
            run, self._run = self._run, None
            handle, self._root_handle = self._root_handle, None
            claim, self._claim = self._claim, None
        if run is None and claim is None:
            return
        try:
            if handle is not None:
                handle.remove()
            if run is not None:
                run.remove_hooks()
                run.tracer.on_backward_start = run.tracer.on_backward_end = None
                run.end()
        finally:
            if claim is not None:
                claim.__exit__(None, None, None)
            self.current = None
            self._set_state(state)

    def _root_returned(self, module: nn.Module, args: tuple, output: Any) -> None:
        run = self._run
        if run is None:
            return
        run.stop_creation_lines()
        self.output = _detached(output)
        if not torch.is_grad_enabled():
            self.end()  # no graph: no backward will come for this forward

    def _backward_started(self, depth: int) -> None:
        run = self._run
        own = depth == 0 and run is not None and run.tracer.phase == "forward" and run.tracer.starting_kind == "backward"
        self._backwards.append(own)
        if own:
            run.tracer.phase = "backward"
            roots = list(run.tracer.backward_roots or ())
            if len(roots) == 1 and isinstance(roots[0], torch.Tensor):
                self.loss = roots[0].detach()
            if self.on_backward is not None:
                self.on_backward(roots)

    def _backward_ended(self, _depth: int) -> None:
        if self._backwards.pop():
            self.final_grads = {name: p.grad for name, p in self.walk.params if p.grad is not None}
            self.end()

    # -- every firing ----------------------------------------------------------------------
    def _emit(self, event: Event, live: LiveFiring) -> None:
        self.events.append(event)
        if self.on_event is not None:
            self.on_event(event)
        self.current = live
        try:
            self.gate.check(event, on_pause=self._paused, live=live)
        finally:
            self.current = None
        run = self._run
        if run is not None:
            hunting = self.hunting
            if hunting != run.tracer.hunting:
                run.tracer.hunting = hunting
                if hunting and run.tracer.phase == "forward":
                    run.note_creation_lines()
            if self.gate.take_step_into() and event.hook == "backward_pre":
                run.tracer.step_into(live.call)
        if self.state == "paused":
            self._set_state("running")

    def _paused(self, event: Event) -> None:
        lazy_stats.flush_pending()  # device summaries reach the host once per pause
        if self.on_pause is not None:
            self.on_pause(event)
        if not self.gate.released:
            self._set_state("paused")

    def _set_state(self, state: str) -> None:
        self.state = state
        if self.on_state is not None:
            self.on_state(state)


def _detached(output: Any) -> Any:
    from torch.utils._pytree import tree_map_only

    try:
        return tree_map_only(torch.Tensor, torch.Tensor.detach, output)
    except Exception:
        return output
