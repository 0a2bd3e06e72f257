"""A debugging session: forward then backward of one model, pausing in every hook firing.

`Session.run()` blocks and is meant for a worker thread; `step()`, `resume()` and `quit()`
come from any other thread. `record()` is the same run without pauses.

What runs forward and computes the loss is either hooktui (a model and its inputs: the
model-file style, `Session(model, inputs, loss_fn)`) or the user's own step, a callable
that returns the loss (`Session(model, step=fn)`, what `hooktui.debug` runs). Backward
always starts from that loss. `restore_model=False` makes the run a real training step:
`.grad` accumulates and buffers move as without hooktui (by default they are put back).
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.nn.parameter import is_lazy
from torch.utils._pytree import tree_map_only

from ..analysis.breakpoints import Breakpoint
from ..autograd import nodes
from ..capture import collector
from ..capture.model_walk import ModelWalk, walk_of
from ..capture.quit import QuitRequested
from ..capture.source import RUNNER_FUNCTION
from ..capture.tracer import LiveFiring, Tracer
from ..capture.user_hooks import UserHooks
from ..records import held
from ..records.ranks import ranked
from ..records.records import ErrorRecord, Event, ModuleInfo, TraceInfo
from ..summaries import lazy_stats, stats
from . import device_errors
from .gate import MODEL_ERRORS, Gate
from .inputs import default_loss, split_inputs
from .lifecycle import TracedRun
from .pipeline import is_schedule, mean_loss, stage_of
from .preserve import preserved_model_state
from .thread_state import ThreadState

_FREEZE_EVERY = 1024  # firings between freezes while running (engine/capture/collector.py)


@dataclass
class Trace:
    """What a run produced. `events` are plain records; the rest is live and optional."""

    info: TraceInfo
    # A Session's: a HeldEvents (records/held.py: packed once no run is under way), or a
    # deque of the last one (Session(keep_events=False)).
    events: list[Event] = field(default_factory=list)
    state: str = "ready"
    error: ErrorRecord | None = None
    output: Any = None
    loss: torch.Tensor | None = None
    # The error came from computing the loss (loss_fn or the default loss), not the model.
    error_in_loss: bool = False
    # The exception itself (live; hooktui.debug raises it again in the caller).
    exception: BaseException | None = None

    @property
    def failed(self) -> bool:
        return self.state == "failed"


def describe_modules(model: nn.Module, walk: ModelWalk | None = None) -> list[ModuleInfo]:
    """Modules and their parameters' shapes; a lazy module's parameters have none until its
    first forward (`ModelWalk.has_lazy` then says to describe again). Described once per
    walk (a walk kept from run to run: model_walk.py), a list of its own for each caller."""
    walk = walk if walk is not None else ModelWalk(model)
    return list(walk.derived("module_infos", _described))


def _described(walk: ModelWalk) -> list[ModuleInfo]:
    return [
        ModuleInfo(
            name=name,
            type=type(m).__name__,
            params={p: list(t.shape) for p, t in m.named_parameters(recurse=False) if not is_lazy(t)},
            raw_name=walk.raw.get(name),
        )
        for name, m in walk.modules
    ]


# Runs with fewer firings leave too little behind to be worth a trim, which walks the
# whole heap (~5 ms for a small CNN's step, 0.05x of it).
_TRIM_AFTER = 20_000


def _trim_heap(firings: int) -> None:
    """After a long run: hand the heap freed by the run (its autograd graph, activations,
    snapshots dropped) back to the system, so the process's memory shows what the trace
    holds (glibc only)."""
    if firings < _TRIM_AFTER:
        return
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _detached(output: Any) -> Any:
    """The output with every tensor detached (same values, same storage): kept after the
    run, it must not hold the autograd graph (its nodes, hooks and saved tensors)."""
    try:
        return tree_map_only(torch.Tensor, torch.Tensor.detach, output)
    except Exception:  # an output type pytree cannot take apart: kept as it is
        return output


class Session:
    def __init__(
        self,
        model: nn.Module,
        inputs: Any = None,
        loss_fn: Callable[[Any], torch.Tensor] | None = None,
        *,
        step: Callable[[], torch.Tensor] | None = None,
        restore_model: bool = True,
        thread_state: ThreadState | None = None,
        quit_finishes: bool = False,
        pause: bool = True,
        label: str | None = None,
        options: stats.StatsOptions | None = None,
        loss_label: str | None = None,
        legacy: bool = False,
        param_grads: bool = True,
        keep_events: bool = True,
        losses: list | None = None,
    ) -> None:
        """`step`: instead of `inputs` (and `loss_fn`), a zero-argument callable that runs the
        forward and returns the loss. `restore_model=False`: leave `.grad` and buffers as the
        run made them (a real training step). `thread_state`: run under the grad mode,
        autocast and CUDA stream captured there (the caller's thread), not under
        `torch.enable_grad()`. `quit_finishes`: `quit()` lets the run go to its end without
        pausing instead of aborting it. `keep_events=False`: `trace.events` keeps only the last
        firing; the others reach `on_event` and are let go (`hooktui trace` prints a run of
        any length in constant memory).

        A step may run its own backward (engine/run/pipeline.py): `model` a pipeline schedule
        (its stage module is traced), or `losses` given (the list the step hands the schedule;
        its mean is the loss), or a step that ran a backward and returned None. hooktui then
        calls no backward."""
        if step is not None and (inputs is not None or loss_fn is not None):
            raise TypeError("Session takes either inputs (and loss_fn) or step, not both")
        self.pipeline = None
        stage = ""
        if is_schedule(model):
            if step is None:
                raise TypeError("a pipeline schedule runs under a step that calls its step(): "
                                "step=lambda: schedule.step(...)")
            model, self.pipeline, stage = stage_of(model)
        if losses is not None and step is None:
            raise TypeError("losses go with a step that runs a pipeline schedule")
        self.losses = losses
        self._param_grads_seen = 0  # param_grad firings so far: a backward reached the parameters
        self._own_backwards: list[bool] = []  # for each backward under way: one the step runs itself
        self.model = model
        self.args, self.kwargs = split_inputs(inputs) if step is None else ((), {})
        self.loss_fn = loss_fn
        self.user_step = step
        self.restore_model = restore_model
        self.final_grads: dict[str, torch.Tensor] = {}  # name -> the .grad the run left (post-mortem)
        self.thread_state = thread_state
        self.quit_finishes = quit_finishes
        self.gate = Gate(pause=pause)
        self.options = stats.StatsOptions() if options is None else options  # made now: HOOKTUI_DEVICE_PATH
        self.legacy = legacy
        self.param_grads = param_grads
        self._tracer: Tracer | None = None
        self._run: TracedRun | None = None
        # The model's own hooks (found now; those registered during the run are added).
        # The model's modules and parameters, walked once for everything the run sets up.
        self._walk = walk_of(model)  # kept from the last run on this model if it has not changed
        self.user_hooks = UserHooks(model, self._walk)
        device = next((str(p.device) for _, p in self._walk.params), "cpu")
        if step is not None and (self.pipeline is not None or losses is not None):
            loss_text = loss_label or ("the mean of the microbatch losses in the list given as losses (the last stage's); "
                                       f"the step ran its own backward{f' ({self.pipeline.schedule}, {stage})' if stage else ''}")
        elif step is not None:
            loss_text = loss_label or "the loss your step returned (with a GradScaler: the scaled loss)"
        elif loss_fn is None:
            loss_text = "default loss: sum of every floating-point output"
        else:
            loss_text = loss_label or f"loss_fn: {getattr(loss_fn, '__name__', 'custom')}(output)"
        self.trace = Trace(
            info=TraceInfo(
                model=label or type(model).__name__,
                modules=describe_modules(model, self._walk),
                loss=loss_text,
                device=device,
                torch_version=torch.__version__,
                **ranked(),
            )
        )
        self.trace.events = held.HeldEvents() if keep_events else deque(maxlen=1)
        self._emitted = 0  # firings so far (trace.events may keep only the last)
        self.current: LiveFiring | None = None
        self._on_event: Callable[[Event], None] | None = None
        self._on_state: Callable[[str], None] | None = None
        self._lock = threading.RLock()

    # -- controls (any thread) ---------------------------------------------------
    def step(self) -> None:
        self.gate.step()

    def resume(self) -> None:
        self.gate.resume()

    def quit(self) -> None:
        if self.quit_finishes:
            self.gate.run_to_end()  # never pause again: the step ends as it would without hooktui
        else:
            self.gate.quit()

    def abort(self) -> None:
        """Stop the run at its next firing, whatever `quit_finishes` says."""
        self.gate.quit()

    def step_into(self) -> None:
        """At a backward_pre firing: step through the autograd nodes of that module call."""
        self.gate.step_into()

    def finish(self) -> None:
        """Run to the backward firing of the module call paused in (like a debugger's finish)."""
        current = self.current
        if current is None:
            self.gate.step()
        else:
            self.gate.finish(current.event.module, current.event.call)

    def run_until(self, predicate) -> None:
        """Run until a firing `predicate` (an Event -> bool) accepts, or a breakpoint."""
        self.gate.run_until(predicate)

    def toggle_breakpoint(self, module: str, phase: str | None = None) -> bool:
        return self.gate.toggle_breakpoint(Breakpoint.on_module(module, phase))

    def toggle_user_hook_breakpoint(self, hook_id: int) -> bool:
        """Break when the user hook `hook_id` (UserHookInfo.id) fires; True when now set."""
        return self.gate.toggle_breakpoint(Breakpoint.on_user_hook(hook_id))

    def add_breakpoint(self, bp: Breakpoint) -> None:
        """Any kind (engine/analysis/breakpoints.py); `resume()` then runs to the first firing it
        stops at. Set a non-finite one before `run()` to also learn the forward line that
        created a bad value (hunt.py)."""
        self.gate.breakpoint_list.add(bp)

    @property
    def hunting(self) -> bool:
        """A non-finite breakpoint is on: the tracer watches where bad values are born."""
        return self.gate.breakpoint_list.has_kind("nonfinite")

    @property
    def state(self) -> str:
        return self.trace.state

    @property
    def events(self) -> list[Event]:
        return self.trace.events

    def let_go_of_results(self) -> None:
        """Nobody will look at this run again (the app that showed it is closed, at `R`):
        what it left for the console goes now, and whatever else became garbage with it is
        collected before the next run freezes the collector (capture/collector.py), so that
        the next run never has two sets of the model's gradients (or two histories) alive."""
        self._drop_results()
        collector.collect_before_next_run()

    def _drop_results(self) -> None:
        """What the last run left for the console: its final .grad (as large as the model's
        parameters), its output and loss."""
        self.final_grads = {}
        self.trace.output = self.trace.loss = None

    # -- the run (worker thread) -------------------------------------------------
    def run(self, on_event: Callable[[Event], None] | None = None, on_state: Callable[[str], None] | None = None) -> Trace:
        self._on_event, self._on_state = on_event, on_state
        self._drop_results()  # a run again: the last run's .grad must not live beside the new ones
        lazy = self._walk.has_lazy
        run = self._run = TracedRun(self.model, self._emit, self.options, walk=self._walk, user_hooks=self.user_hooks,
                                    legacy=self.legacy, param_grads=self.param_grads,
                                    on_backward_start=self._backward_started, on_backward_end=self._backward_ended)
        tracer = self._tracer = run.tracer
        tracer.pipeline = self.pipeline
        run.begin()
        self._set_state("running")
        final = "finished"
        # Everything that exists now lives on: out of the collector's way for the run
        # (unfrozen when it ends, in the `finally` below), so that a full collection walks
        # only what the run made.
        collector.run_started()
        held.run_started()
        try:
            with self._model_state(), self._grad_state():
                self._follow_hunting()
                run.install()
                try:
                    loss = self._forward_and_loss(tracer)
                    run.stop_creation_lines()  # the forward's and the loss's ops have their lines
                    if lazy:  # the first forward has given them their shapes
                        self.trace.info.modules = describe_modules(self.model)
                    if loss is None:  # the step ran its own backward (a pipeline schedule's step)
                        self.trace.loss = mean_loss(self.losses)
                        if self.pipeline is None and self.losses is None:
                            self.trace.info.loss = "none: the step ran its own backward and returned None"
                    else:
                        self.trace.loss = loss.detach()
                        loss.backward()  # the tracer notices it starting (backward_calls.py)
                    # DDP's and FSDP1's callbacks queued for the backward's end have run (a
                    # schedule's scaling too): the .grad the optimizer will use, where
                    # param_grad showed another (final_grads.py).
                    tracer.contain.call("recording the final .grad", tracer.backward_returned)
                    # For the console after the run (pdb's post-mortem): the .grad each parameter
                    # ended with, which restoring the model takes off it.
                    self.final_grads = {name: p.grad for name, p in self._walk.params if p.grad is not None}
                finally:
                    run.remove_hooks()  # each part, whatever the other does (lifecycle.py)
        except QuitRequested:
            final = "quit"
        except MODEL_ERRORS as exc:  # the user's model failed: record it, never crash the host
            self.trace.exception = exc
            self._record_error(exc, tracer.phase, tracer.next_index(), tracer.call_that_raised(exc))
            final = "failed"
        finally:
            # First, so that nothing below can leave the collector frozen: the model's
            # garbage cycles made during the run can be collected again.
            collector.run_ended()
            self.current = None
            self._tracer = self._run = None
            # The tracer's own cycles (hooks, closures) must not hold this session, and so the
            # trace, until a collection: its listeners are bound methods of the session.
            tracer.on_backward_start = tracer.on_backward_end = None
            try:
                run.end()  # device summaries reach the host once, here
            finally:
                held.run_ended()  # the firings held packed, once no other run is under way (held.py)
                nodes.forget_built_records()
                stats.forget_recent()
            _trim_heap(self._emitted)
        self._set_state(final)
        return self.trace

    def _model_state(self):
        if self.restore_model:
            return preserved_model_state(self.model, self.args, self.kwargs, self._walk)
        return contextlib.nullcontext()

    def _grad_state(self):
        return torch.enable_grad() if self.thread_state is None else self.thread_state.applied()

    def _backward_started(self, depth: int) -> None:
        """A backward the step runs itself (a schedule's microbatch, not autograd.grad in a
        forward): its firings are backward's; the next microbatch's forward is forward's."""
        tracer = self._tracer
        own = (depth == 0 and self.user_step is not None and tracer is not None and tracer.phase == "forward"
               and tracer.starting_kind == "backward")
        self._own_backwards.append(own)
        if own:
            tracer.phase = "backward"

    def _backward_ended(self, _depth: int) -> None:
        if self._own_backwards.pop() and self._tracer is not None:
            self._tracer.phase = "forward"

    def _forward_and_loss(self, tracer: Tracer) -> torch.Tensor | None:
        """Run the forward and compute the loss (hooktui's way or the user's step). None: the
        step ran its own backward."""
        if self.user_step is not None:
            loss = self.user_step()  # the forward and the loss, in the user's code
            self.trace.output = _detached(loss)
            tracer.phase = "backward"
            if self.pipeline is not None or self.losses is not None or (loss is None and self._param_grads_seen):
                return None
            self.trace.error_in_loss = True
            hint = ("" if not self._param_grads_seen else " (the step ran a backward itself, as a pipeline schedule's "
                    "step does: give the schedule as the model, or return None)")
            loss = self._checked_loss(loss, "the step must return the loss tensor", hint)
        else:
            output = self._run_model_forward()
            self.trace.output = _detached(output)  # a tensor with grad would hold the whole graph
            tracer.phase = "backward"
            self.trace.error_in_loss = True
            loss = default_loss(output) if self.loss_fn is None else self.loss_fn(output)
            loss = self._checked_loss(loss, "the loss must be a tensor")
        self.trace.error_in_loss = False
        return loss

    def _run_model_forward(self) -> Any:
        # The name is what source.caller_location() stops at: the root call has no user caller.
        return self.model(*self.args, **self.kwargs)

    @staticmethod
    def _checked_loss(loss: Any, what: str, hint: str = "") -> torch.Tensor:
        if not isinstance(loss, torch.Tensor):
            raise TypeError(f"{what}{hint}, got {type(loss).__name__}")
        if loss.numel() != 1:
            raise ValueError(f"the loss must be a single number, got a tensor of shape {tuple(loss.shape)}{hint}")
        if not loss.requires_grad:
            raise ValueError("the loss does not require grad: no parameter or input of the model reaches it")
        return loss

    def _emit(self, event: Event, live: LiveFiring) -> None:
        with self._lock:
            self.trace.events.append(event)
            self._emitted += 1
            if event.hook == "param_grad":
                self._param_grads_seen += 1
            if self._emitted % _FREEZE_EVERY == 0:
                # Records live long and hold no cycles: out of the collector's way, or
                # each collection walks every record so far (a quadratic run-through).
                collector.freeze()
            if self._on_event is not None:
                self._on_event(event)
            self.current = live
            self.gate.check(event, on_pause=self._on_pause, live=live)
            self.current = None
            run = self._run
            if run is not None and run.tracer.hunting != self.hunting:
                self._follow_hunting()
            if self.gate.take_step_into() and event.hook == "backward_pre" and self._tracer is not None:
                self._tracer.step_into(live.call)
            if self.trace.state == "paused":
                self._set_state("running")

    def _follow_hunting(self) -> None:
        """Worker side: start watching for where bad values are born once a non-finite
        breakpoint is set (lines of forward ops only from then on; backward from the next one)."""
        run = self._run
        hunting = self.hunting
        if run is None or hunting == run.tracer.hunting:
            return
        run.tracer.hunting = hunting
        if hunting and run.tracer.phase == "forward":
            run.note_creation_lines()

    def _on_pause(self, _event: Event) -> None:
        lazy_stats.flush_pending()  # device summaries reach the host once per pause
        self._set_state("paused")

    def _record_error(self, exc: BaseException, phase: str, index: int, failed_call=None) -> None:
        error = ErrorRecord(
            type=type(exc).__name__,
            message=str(exc),
            traceback="".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
        )
        self.trace.error = error
        # Where: the forward call the exception was raised in; in backward (or in the
        # loss), the module of the last firing before it.
        last = self.trace.events[-1] if self.trace.events else None
        if failed_call is not None:
            module, module_type, call, source = failed_call
        elif last is not None:
            module, module_type, call, source = last.module, last.module_type, last.call, last.source
        else:
            module, module_type, call, source = "", "", 0, None
        event = Event(
            index=index,
            phase=phase,
            hook="error",
            module=module,
            module_type=module_type,
            call=call,
            source=source,
            error=error,
            notes=[f"{error.type}: {error.message}"] + _advice(error.message, self.trace.error_in_loss),
        )
        self.trace.events.append(event)
        if self._on_event is not None:
            self._on_event(event)

    def _set_state(self, state: str) -> None:
        self.trace.state = state
        if self._on_state is not None:
            self._on_state(state)


assert Session._run_model_forward.__name__ == RUNNER_FUNCTION


def _advice(message: str, in_loss: bool) -> list[str]:
    """The error firing's notes after the error itself: what to do, when it is known."""
    text = device_errors.advice(message, in_loss)
    return [] if text is None else [text]


def record(model: nn.Module, inputs: Any, loss_fn: Callable[[Any], torch.Tensor] | None = None, **kwargs) -> Trace:
    """Run forward and backward once with every module hooked, without pausing.

    Returns the Trace; `trace.events` are the records `hooktui trace --json` prints.
    A pipeline schedule: `record(schedule, None, step=lambda: schedule.step(...), losses=losses)`
    (engine/run/pipeline.py).
    If the model raises, the trace ends with an `error` event and `trace.failed` is true.
    The model is left exactly as it was found.
    """
    from .one_run import claimed

    with claimed("record"):
        return Session(model, inputs, loss_fn, pause=False, **kwargs).run()
