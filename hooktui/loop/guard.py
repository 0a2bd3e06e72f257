"""`hooktui.guard(model)`: a whole training loop checked for NaN/Inf at every firing.

    with hooktui.guard(model):
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            ...

Every module call of `model` (forward and backward) and every parameter gradient is a
firing, as in the app, with the exact NaN / +Inf / -Inf counts its records carry; nothing
pauses and nothing is drawn. At the first bad value the guard raises NonFiniteError (or
ThresholdError for a bound given) from where it was seen, saying where it was born
(engine/analysis/born.py: the module call, tensor, phase, source line; in backward the autograd
node), after saving the step's firings so far to a trace file that `hooktui view` opens at
that firing. With `on_error="debug"` and a terminal, the app opens there first. Under
torch.distributed the error also says its rank and what the bad value is of this rank's
(guard_ranks.py: a shard, which gradient), read locally.

How steps are told apart: a step ends when its outermost backward ends (or a forward
under no_grad ends); then the tracer is replaced by a fresh one, so call numbers and
firing numbers start again and nothing of an old step is kept. While a non-finite check
is on, the tracer hunts (engine/capture/hunt.py): forward ops note the line that created them
and backward's first node to make a non-finite gradient is a firing of its own.

On a device (a model whose parameters are not on the CPU, or `stats_options` with
`defer_host`), reading a count back at every firing would wait for the device each time.
There the checks wait for the step's end: every firing's counts are partial sums on the
device (engine/summaries/device_reduce.py), the hunt keeps each node's gradients summarised, and
when the step ends one transfer of the counts alone finds the first bad firing, which
is reported exactly as it would have been at the firing: the same index, the same
words. The difference: the error is raised as the step's backward returns (a forward
under no_grad: as it returns), not from inside the firing, so the rest of the step has
run; the optimizer's step has not. A clean step's summaries are dropped uncopied.
"""

from __future__ import annotations

import contextlib
import os
import weakref
from typing import Any

import torch
from torch import nn

from ..engine.summaries import lazy_stats
from ..engine.records import ranks
from ..engine.records import notes as note_kinds
from ..engine.summaries.stats import StatsOptions
from ..engine.analysis.born import Born, where_born
from ..engine.capture.contain import failure_text
from ..engine.capture.grad_kinds import GradKinds
from ..engine.capture.model_walk import ModelWalk
from ..engine.analysis.breakpoints import Breakpoint
from ..engine.run.lifecycle import LiveFiring, TracedRun
from ..engine.run.one_run import claimed
from ..engine.records.records import Event, LazyTensorRecord, TraceInfo
from ..engine.run.session import describe_modules
from ..engine.records.trace_file import write_trace
from . import guard_ranks, in_app, say, where
from .errors import GuardError, NonFiniteError, Quit, ThresholdError

ON_ERROR = ("raise", "debug")
# Forwards of the root module (with grad) in one step with no backward yet, after which
# the step is started afresh: an evaluation loop without torch.no_grad() must not keep
# every graph alive. A backward of those forwards is then checked node by node only.
MAX_FORWARDS_PER_STEP = 64

# The guard active on each model: hooktui.debug sets it aside for the step it debugs.
_ACTIVE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@contextlib.contextmanager
def set_aside(model: nn.Module):
    """While the body runs (a hooktui.debug step), the guard on `model`, if any, is off:
    one tracer at a time sees a backward (backward_calls.py tells only the innermost).
    Its next step starts afresh afterwards."""
    active = _ACTIVE.get(model)
    if active is None or not active._active:
        yield
        return
    active._stop_tracer()
    try:
        yield
    finally:
        active.step += 1
        active._start_tracer()


def guard(
    model: nn.Module,
    *,
    inf: bool = True,
    max_grad_norm: float | None = None,
    max_abs: float | None = None,
    on_error: str | None = None,
    find_node: bool = True,
    stats_options: StatsOptions | None = None,
) -> Guard:
    """Check every forward and backward of `model` inside the `with` block.

    A NaN is bad anywhere; an Inf where a gradient flows (not in an attention mask passed
    into a module: breakpoints.is_gradless_input). `inf=False`: only NaN counts as bad. `max_grad_norm`: also stop when
    a gradient's norm is above it; `max_abs`: when any tensor's largest finite |value| is.
    `on_error`: "raise" (the default) raises; "debug" opens the app at that firing first
    when a terminal is attached (under `hooktui run`, the default). `find_node=False`:
    skip what names the autograd node (and its forward line) where a gradient goes bad
    inside a module's backward, a per-op cost (docs/benchmarks.md); the module call is
    still named. `stats_options`: how tensors are summarised (`defer_host=True` checks
    as on a device, at the step's end; tests use it on the CPU).
    """
    if on_error is not None and on_error not in ON_ERROR:
        raise ValueError(f"on_error must be one of {ON_ERROR}, got {on_error!r}")
    if not isinstance(model, nn.Module):
        raise TypeError(f"hooktui.guard needs the model (an nn.Module), got {type(model).__name__}")
    checks = [Breakpoint.nonfinite(inf=inf)]
    if max_grad_norm is not None:
        checks.append(Breakpoint.threshold(max_grad_norm, stat="norm", phase="backward"))
    if max_abs is not None:
        checks.append(Breakpoint.threshold(max_abs, stat="absmax"))
    return Guard(model, checks, on_error, where.call_site(), find_node=find_node, options=stats_options)


class Guard:
    def __init__(self, model: nn.Module, checks: list[Breakpoint], on_error: str | None, call_site: str, *, find_node: bool = True,
                 options: StatsOptions | None = None) -> None:
        self.model = model
        self.options = options or StatsOptions()
        self._deferred = False  # checks at the step's end (a device model): decided on entering
        self.checks = checks
        self.on_error = on_error
        self.call_site = call_site
        self.step = 0  # steps started under the guard
        self.root_depth = 0
        self.events: list[Event] = []
        self._run: TracedRun | None = None  # the current step's (engine/run/lifecycle.py)
        self._root_handles: list = []
        self._forwards = 0  # root forwards with grad in this step, none backwarded yet
        self._active = False
        self._claim = None  # one_run.claimed, held from __enter__ to __exit__
        self._hunting = find_node and any(bp.kind == "nonfinite" for bp in checks)
        self._cut_short = False  # a stop ended the current step (step_ended)

    # -- the with block ----------------------------------------------------------------
    def __enter__(self) -> Guard:
        where.trace_folder()  # a bad HOOKTUI_DIR is said now, not at step 4,312
        if self.model in _ACTIVE:
            raise RuntimeError("hooktui.guard: this model is already guarded (one guard per model)")
        claim = claimed("guard")
        claim.__enter__()  # held for the with block (one_run.py); refused from a second thread
        self._claim = claim
        _ACTIVE[self.model] = self
        self._active = True
        self._deferred = self.options.defer_host or any(p.device.type != "cpu" for p in self.model.parameters())
        try:
            self._start_tracer()
        except BaseException:
            self._release()
            raise
        return self

    def __exit__(self, *exc_info) -> bool:
        try:
            # Deferred: a last forward with no backward is checked now (the host path raised in it).
            error = self._checked_step() if self._deferred and exc_info[0] is None else None
            self._active = False
            _ACTIVE.pop(self.model, None)
            self._stop_tracer()
        finally:
            self._release()
        if error is not None:
            raise error
        if isinstance(exc_info[1], GuardError):
            _drop_internal_frames(exc_info[1])
        return False

    def _release(self) -> None:
        self._active = False
        _ACTIVE.pop(self.model, None)
        claim, self._claim = self._claim, None
        if claim is not None:
            claim.__exit__(None, None, None)

    # -- steps -------------------------------------------------------------------------
    @property
    def _tracer(self):
        return None if self._run is None else self._run.tracer

    def _start_tracer(self, walk: ModelWalk | None = None) -> None:
        # The model's own hooks are firings as in a Session (user_hook), so that every firing
        # has the number `trace` and the app give it (engine/records/firing.py).
        # For each backward under way on this tracer, innermost last: whether it is the step's
        # own (the outermost, not autograd.grad inside forward), whose end ends the step.
        steps: list[bool] = []

        def backward_started(depth: int) -> None:
            steps.append(depth == 0 and self.root_depth == 0)
            if steps[-1]:
                run.tracer.phase = "backward"

        def backward_ended(_depth: int) -> None:
            if steps.pop():
                self.step_ended()

        run = TracedRun(self.model, self._emit, self.options, walk=walk, legacy=False, param_grads=True,
                        on_backward_start=backward_started, on_backward_end=backward_ended)
        run.begin()
        run.tracer.hunting = self._hunting
        run.tracer.defer_hunt = self._deferred
        self._run = run
        run.install()
        # After the tracer's: the root's post-hook must run after the tracer's (it may end the step).
        self._root_handles = [
            self.model.register_forward_pre_hook(self._contained(self._root_pre, "its root forward pre-hook")),
            self.model.register_forward_hook(self._contained(self._root_post, "its root forward hook"), always_call=True),
        ]

    def _contained(self, hook, where: str):
        """A root hook that raises only the guard's own errors (and Quit) into the model's call."""

        def run(*args):
            try:
                return hook(*args)
            except (GuardError, Quit):
                raise
            except Exception as exc:
                self._failed(where, exc)
                return None

        return run

    def _failed(self, where: str, exc: Exception) -> None:
        """hooktui's own failure: noted on the step's firings (engine/capture/contain.py), and a HooktuiWarning."""
        if self._tracer is not None:
            self._tracer.contain.failed(f"hooktui.guard's {where}", exc)
        say.warn(f"guard failed in {where} and went on: {failure_text(exc)}")

    def _checked_step(self):
        try:
            return self._check_step()
        except Exception as exc:  # hooktui's failure: the step goes on unchecked, never stopped by it
            self._failed("checking the step at its end", exc)
            return None

    def _stop_tracer(self) -> None:
        for handle in self._root_handles:
            handle.remove()
        self._root_handles = []
        run = self._run
        if run is not None:
            run.remove_hooks(failed=lambda where, exc: self._failed(f"{where} at the step's end", exc))
            # Nobody reads a finished step's summaries: never copied (a stop read its own first).
            run.end(discard=self._step_summaries() if self._deferred else None)
        self.events = []
        self._forwards = 0
        self._run = None

    def step_ended(self) -> None:
        """A step is over: its firings and graph references go, a fresh tracer comes.
        Deferred: the step's checks run first, and their error is raised last."""
        if not self._active:
            return
        error = self._checked_step() if self._deferred else None
        had_firings = bool(self.events)
        # Inside the model's call, or after a stop that cut a step short, FSDP may still hold
        # its gathered parameters in place of the shards: the next tracer takes the walk of
        # the model as this one found it (its shards, its names), not a walk made now.
        keep = self._tracer.walk if self._tracer is not None and (self.root_depth or self._cut_short) else None
        self._cut_short = False
        self._restart(keep)
        if had_firings:
            self.step += 1
        if error is not None:
            raise error

    def _restart(self, walk: ModelWalk | None = None) -> None:
        """The next step's tracer in place of this one's. This runs inside the model's call
        (a stop mid-forward, a backward's end), where FSDP may have put views in place of
        the parameters: a failure of hooktui's here is said and contained (the step goes on,
        the guard's own error still comes out), never raised into the user's step. A tracer
        that could not start is taken off again: the guard checks nothing more."""
        try:
            self._stop_tracer()
        except Exception as exc:
            self._run = None
            self._failed("ending a step", exc)
        try:
            self._start_tracer(walk)
        except Exception as exc:
            self._failed("starting the next step (it checks nothing more in this with block)", exc)
            try:
                self._stop_tracer()
            except Exception:  # said above; what is left of it can only be dropped
                self._run = None

    def _root_pre(self, module: nn.Module, args: tuple) -> None:
        if self.root_depth == 0 and self._hunting and self._run is not None and torch.is_grad_enabled():
            self._run.note_creation_lines()  # the line that created each node, for backward's explanation
        self.root_depth += 1

    def _root_post(self, module: nn.Module, args: tuple, output: Any) -> None:
        self.root_depth -= 1
        if self.root_depth:
            return
        self._stop_lines()
        if not torch.is_grad_enabled():
            self.step_ended()  # no graph: no backward will come for this forward
            return
        self._forwards += 1
        if self._forwards >= MAX_FORWARDS_PER_STEP:
            self.step_ended()

    def _stop_lines(self) -> None:
        if self._run is not None:
            self._run.stop_creation_lines()

    # -- every firing --------------------------------------------------------------------
    def _emit(self, event: Event, live: LiveFiring) -> None:
        self.events.append(event)
        if event.hook == "backward_pre":
            self._forwards = 0
        if self._deferred:
            return  # read nothing now: the step's end decides (_check_step)
        for bp in self.checks:
            reason = bp.check(event)
            if reason is not None:
                self._stop(event, bp, reason)

    def _stop(self, event: Event, bp: Breakpoint, reason: str) -> None:
        error = self._error(event, bp, reason)
        # The loop may catch the error and go on: its next step starts afresh. In forward
        # now (the hooks the calls still run on the way out find an emptied tracer); in
        # backward when it has unwound (backward_pass), never while autograd runs hooks.
        if self._tracer is not None and self._tracer.backward_depth == 0:
            self.step_ended()
        raise error

    # -- deferred: the step's end ------------------------------------------------------------
    def _step_summaries(self) -> list:
        """Every summary the step's firings (and the hunt's candidates) hold."""
        records = [t for event in self.events for t in event.tensors]
        tracer = self._tracer
        if tracer is not None:
            records += [t for found in tracer.node_watch.candidates for t in found.tensors]
        return [r._summary for r in records if isinstance(r, LazyTensorRecord)]

    def _check_step(self):
        """The first bad firing of the step that just ended, as the error the host path
        would have raised at it; None when the step is clean. One transfer (the counts
        only) when it is; a threshold check reads statistics, a second one."""
        tracer = self._tracer
        if tracer is None or not self.events:
            return None
        lazy_stats.read_counts(self._step_summaries())
        events = self.events
        for event in events:
            if event.hook == "param_grad" and len(event.tensors) > 1:
                # The .grad held before the backward: shown only when it was not finite.
                event.tensors = [t for t in event.tensors if not (t.extra and note_kinds.kind_of(t.note) == "held_grad"
                                                                  and not any(t.nonfinite_counts or ()))]
        found = tracer.node_watch.first_born() if self._hunting else None
        if found is not None:  # N.1 after the plain firing N before it (engine/records/firing.py): nothing moves
            node_event = tracer.born_node_event(found)
            events = [e for e in events if e.key <= node_event.key] + [node_event] + [e for e in events if e.key > node_event.key]
        for position, event in enumerate(events):
            if self._hunting and (notes := tracer.deferred_notes(event)):
                event.notes = notes
            for bp in self.checks:
                reason = bp.check(event)
                if reason is not None:
                    self.events = events[: position + 1]
                    return self._error(event, bp, reason)
        return None

    def _error(self, event: Event, bp: Breakpoint, reason: str):
        """The error for the first bad firing, its step's firings saved to a trace file."""
        events = self.events
        step = self.step
        self._cut_short = True  # the step ends by this error, wherever FSDP is in it
        try:
            born = where_born(events, bp)
        except Exception as exc:  # the bad value is what matters: said without where it was born
            born = None
            event.notes = [*event.notes, f"hooktui could not work out where the bad value was born: {failure_text(exc)}"]
        number, world = ranks.rank_and_world()
        rank = None if number is None or world is None else (number, world)
        ranked = self._on_this_rank(event, bp) if rank is not None else []
        message = _message(step, event, bp, reason, born, rank, ranked)
        if born is not None:
            # A new list: records without notes share one frozen empty list (records.NO_NOTES).
            event.notes = [*event.notes, "hooktui.guard stopped here. Where it was born: " + " ".join(born.lines)]
        if ranked:
            event.notes = [*event.notes, f"On rank {rank[0]} of {rank[1]}: " + " ".join(ranked)]
        on = "" if rank is None else f", rank {rank[0]} of {rank[1]}"
        info = TraceInfo(
            model=f"{type(self.model).__name__} (hooktui.guard at {self.call_site}, step {step}{on})",
            modules=describe_modules(self.model),
            loss="the loss your loop computed",
            device=next((str(p.device) for p in self.model.parameters()), "cpu"),
            torch_version=torch.__version__,
            stopped_at=event.index,
            stopped_sub=event.sub,
            **ranks.ranked(),
        )
        path = _save(info, events)
        if path is not None:
            name = where.shown(path)
            message += f"\nThe step's firings so far are in {name}: `hooktui view {name}` opens at #{event.number}."
        error_type = NonFiniteError if bp.kind == "nonfinite" else ThresholdError
        error = error_type(message, born=born, index=event.index, sub=event.sub, step=step, trace_path=path)
        if self._maybe_open_app(info, events) and where.under_hooktui_run:
            # The user saw it in the app and quit: `hooktui run` ends the script with one line
            # and status 0, as after `hooktui.debug` (the error is the Quit's cause).
            saved = f"; its firings are in {where.shown(path)}" if path is not None else ""
            # The line the step was on (`loss.backward()`), not the `with` line it is under.
            at = where.user_line()
            site = f"{at} (the guard of {self.call_site})" if at and at != self.call_site else self.call_site
            quit = Quit(f"{site}, step {step}, firing #{event.number}{saved}")
            quit.__cause__ = error
            return quit
        return error

    def _on_this_rank(self, event: Event, bp: Breakpoint) -> list[str]:
        """Under torch.distributed: what the bad value is of this rank's (guard_ranks.py)."""
        tracer = self._tracer
        try:
            walk = tracer.walk if tracer is not None else ModelWalk(self.model)
            return guard_ranks.lines(event, bp, walk.params, GradKinds(walk.modules).flat)
        except Exception as exc:  # the bad value is what matters: said without this rank's part
            return [f"hooktui could not work out this rank's part: {failure_text(exc)}"]

    def _maybe_open_app(self, info: TraceInfo, events: list[Event]) -> bool:
        on_error = self.on_error or ("debug" if where.under_hooktui_run else "raise")
        if on_error != "debug" or not where.opens_app():
            return False
        from ..ui.app import HooktuiApp

        in_app.show_recorded(HooktuiApp(recorded=(info, list(events))))
        return True


def _drop_internal_frames(error: BaseException) -> None:
    """A guard's error is raised in a hook, under a dozen frames of torch's module call or
    backward and of hooktui's tracer that say nothing about the user's code: the traceback
    Python prints ends at the user's line (`loss.backward()`), then the message.
    HOOKTUI_TRACEBACK=1 keeps every frame (to report a bug of hooktui's)."""
    if os.environ.get("HOOKTUI_TRACEBACK") == "1":
        return
    tb, last_own, left_out = error.__traceback__, None, 0
    while tb is not None:
        if _internal(tb.tb_frame.f_code.co_filename):
            left_out += 1
        elif left_out == 0:
            last_own = tb
        tb = tb.tb_next
    if last_own is None or left_out == 0:
        return
    last_own.tb_next = None
    if hasattr(error, "add_note"):  # Python 3.11
        error.add_note(f"({left_out} frames of torch and hooktui left out; HOOKTUI_TRACEBACK=1 keeps them)")


def _internal(filename: str) -> bool:
    path = os.path.abspath(filename)
    return path.startswith((_HOOKTUI_DIR, _TORCH_DIR))


_HOOKTUI_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


def _message(step: int, event: Event, bp: Breakpoint, reason: str, born: Born | None,
             rank: tuple[int, int] | None = None, ranked: list[str] | None = None) -> str:
    module = event.module or "(root)"
    phase = "" if event.hook.startswith(event.phase) else f" in {event.phase}"
    on = "" if rank is None else f"rank {rank[0]} of {rank[1]}, "
    head = (f"hooktui.guard: {on}step {step}, firing #{event.number} ({event.hook}{phase} of {module} "
            f"({event.module_type}) call {event.call}): {reason}")
    if born is not None:
        lines = [_GUARD_WORDS.get(note_kinds.kind_of(line), line) for line in born.lines if not line.startswith(_APP_ADVICE)]
        head += "\nWhere it was born:\n" + "\n".join("  " + line for line in lines)
    if ranked:
        head += f"\nOn rank {rank[0]} of {rank[1]}:\n" + "\n".join("  " + line for line in ranked)
    return head


# born.py's advice for the app; in the guard, find_node=True is what shows the node.
_APP_ADVICE = ("Set the non-finite breakpoint before backward", "With the non-finite breakpoint set before backward")
# born.py's lines that are the engine's notes for the app, by the notes' kinds, said as they
# hold in a guard (lines are noted inside the model's forward only, so a node made in the loss
# outside it has none).
_GUARD_WORDS = {
    "created_unknown": "the line that created it is unknown: hooktui.guard notes the lines of the model's forward only",
}


def _save(info: TraceInfo, events: list[Event]):
    try:
        path = where.new_trace_path()
        write_trace(path, info, events)
    except Exception as exc:  # the error is what matters (never replaced by hooktui's): say why there is no file
        say.warn(f"guard could not save the step's firings: {failure_text(exc)}")
        return None
    return path
