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
(engine/born.py: the module call, tensor, phase, source line; in backward the autograd
node), after saving the step's firings so far to a trace file that `hooktui view` opens at
that firing. With `on_error="debug"` and a terminal, the app opens there first.

How steps are told apart: a step ends when its outermost backward ends (or a forward
under no_grad ends); then the tracer is replaced by a fresh one, so call numbers and
firing numbers start again and nothing of an old step is kept. While a non-finite check
is on, the tracer hunts (engine/hunt.py): forward ops note the line that created them
and backward's first node to make a non-finite gradient is a firing of its own.
"""

from __future__ import annotations

import contextlib
import sys
import weakref
from typing import Any

import torch
from torch import nn

from ..engine import hunt, lazy_stats, nodes
from ..engine.born import Born, where_born
from ..engine.breakpoints import Breakpoint
from ..engine.capture import LiveFiring, Tracer
from ..engine.records import Event, TraceInfo
from ..engine.session import describe_modules
from ..engine.trace_file import write_trace
from . import in_app, where
from .errors import NonFiniteError, Quit, ThresholdError

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
) -> Guard:
    """Check every forward and backward of `model` inside the `with` block.

    A NaN is bad anywhere; an Inf where a gradient flows (not in an attention mask passed
    into a module: breakpoints.is_gradless_input). `inf=False`: only NaN counts as bad. `max_grad_norm`: also stop when
    a gradient's norm is above it; `max_abs`: when any tensor's largest finite |value| is.
    `on_error`: "raise" (the default) raises; "debug" opens the app at that firing first
    when a terminal is attached (under `hooktui run`, the default). `find_node=False`:
    skip what names the autograd node (and its forward line) where a gradient goes bad
    inside a module's backward, a per-op cost (docs/benchmarks.md); the module call is
    still named.
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
    return Guard(model, checks, on_error, where.call_site(), find_node=find_node)


class _StepTracer(Tracer):
    """A Tracer that tells the guard when backward starts and when a step's backward ends."""

    def __init__(self, model: nn.Module, emit, owner: Guard) -> None:
        super().__init__(model, emit, legacy=False, param_grads=True)
        self.owner = owner
        self.depth = 0

    @contextlib.contextmanager
    def backward_pass(self, roots: list[torch.Tensor], kind: str, create_graph: bool = False, keep_graph: bool | None = None):
        outermost = self.depth == 0 and self.owner.root_depth == 0  # not autograd.grad inside forward
        if outermost:
            self.phase = "backward"
        self.depth += 1
        try:
            with super().backward_pass(roots, kind, create_graph, keep_graph):
                yield
        finally:
            self.depth -= 1
            if outermost:
                self.owner.step_ended()


class Guard:
    def __init__(self, model: nn.Module, checks: list[Breakpoint], on_error: str | None, call_site: str, *, find_node: bool = True) -> None:
        self.model = model
        self.checks = checks
        self.on_error = on_error
        self.call_site = call_site
        self.step = 0  # steps started under the guard
        self.root_depth = 0
        self.events: list[Event] = []
        self._tracer: _StepTracer | None = None
        self._root_handles: list = []
        self._lines: hunt.CreationLines | None = None
        self._forwards = 0  # root forwards with grad in this step, none backwarded yet
        self._active = False
        self._hunting = find_node and any(bp.kind == "nonfinite" for bp in checks)

    # -- the with block ----------------------------------------------------------------
    def __enter__(self) -> Guard:
        where.trace_folder()  # a bad HOOKTUI_DIR is said now, not at step 4,312
        if self.model in _ACTIVE:
            raise RuntimeError("hooktui.guard: this model is already guarded (one guard per model)")
        _ACTIVE[self.model] = self
        self._active = True
        self._start_tracer()
        return self

    def __exit__(self, *exc_info) -> bool:
        self._active = False
        _ACTIVE.pop(self.model, None)
        self._stop_tracer()
        return False

    # -- steps -------------------------------------------------------------------------
    def _start_tracer(self) -> None:
        lazy_stats.start_run()
        tracer = self._tracer = _StepTracer(self.model, self._emit, self)
        tracer.hunting = self._hunting
        tracer.install()
        # After the tracer's: the root's post-hook must run after the tracer's (it may end the step).
        self._root_handles = [
            self.model.register_forward_pre_hook(self._root_pre),
            self.model.register_forward_hook(self._root_post, always_call=True),
        ]

    def _stop_tracer(self) -> None:
        for handle in self._root_handles:
            handle.remove()
        self._root_handles = []
        if self._tracer is not None:
            self._tracer.remove()
            self._tracer = None
        self._stop_lines()
        self.events = []
        self._forwards = 0
        nodes.forget_node_records()
        lazy_stats.flush_pending()

    def step_ended(self) -> None:
        """A step is over: its firings and graph references go, a fresh tracer comes."""
        if not self._active:
            return
        had_firings = bool(self.events)
        self._stop_tracer()
        if had_firings:
            self.step += 1
        self._start_tracer()

    def _root_pre(self, module: nn.Module, args: tuple) -> None:
        if self.root_depth == 0 and self._hunting and self._lines is None and torch.is_grad_enabled():
            self._lines = hunt.CreationLines()  # the line that created each node, for backward's explanation
            self._lines.__enter__()
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
        if self._lines is not None:
            self._lines.__exit__(None, None, None)
            self._lines = None

    # -- every firing --------------------------------------------------------------------
    def _emit(self, event: Event, live: LiveFiring) -> None:
        self.events.append(event)
        if event.hook == "backward_pre":
            self._forwards = 0
        for bp in self.checks:
            reason = bp.check(event)
            if reason is not None:
                self._stop(event, bp, reason)

    def _stop(self, event: Event, bp: Breakpoint, reason: str) -> None:
        events = self.events
        step = self.step
        born = where_born(events, bp)
        message = _message(step, event, bp, reason, born)
        if born is not None:
            # A new list: records without notes share one frozen empty list (records.NO_NOTES).
            event.notes = [*event.notes, "hooktui.guard stopped here. Where it was born: " + " ".join(born.lines)]
        info = TraceInfo(
            model=f"{type(self.model).__name__} (hooktui.guard at {self.call_site}, step {step})",
            modules=describe_modules(self.model),
            loss="the loss your loop computed",
            device=next((str(p.device) for p in self.model.parameters()), "cpu"),
            torch_version=torch.__version__,
            stopped_at=event.index,
        )
        path = _save(info, events)
        if path is not None:
            name = where.shown(path)
            message += f"\nThe step's firings so far are in {name}: `hooktui view {name}` opens at #{event.index}."
        error_type = NonFiniteError if bp.kind == "nonfinite" else ThresholdError
        error = error_type(message, born=born, index=event.index, step=step, trace_path=path)
        opened = self._maybe_open_app(info, events)
        # The loop may catch the error and go on: its next step starts afresh. In forward
        # now (the hooks the calls still run on the way out find an emptied tracer); in
        # backward when it has unwound (backward_pass), never while autograd runs hooks.
        if self._tracer is not None and self._tracer.depth == 0:
            self.step_ended()
        if opened and where.under_hooktui_run:
            # The user saw it in the app and quit: `hooktui run` ends the script with one line
            # and status 0, as after `hooktui.debug` (the error is the Quit's cause).
            saved = f"; its firings are in {where.shown(path)}" if path is not None else ""
            raise Quit(f"{self.call_site}, step {step}, firing #{event.index}{saved}") from error
        raise error

    def _maybe_open_app(self, info: TraceInfo, events: list[Event]) -> bool:
        on_error = self.on_error or ("debug" if where.under_hooktui_run else "raise")
        if on_error != "debug" or not where.opens_app():
            return False
        from ..ui.app import HooktuiApp

        in_app.show_recorded(HooktuiApp(recorded=(info, list(events))))
        return True


def _message(step: int, event: Event, bp: Breakpoint, reason: str, born: Born | None) -> str:
    module = event.module or "(root)"
    phase = "" if event.hook.startswith(event.phase) else f" in {event.phase}"
    head = (f"hooktui.guard: step {step}, firing #{event.index} ({event.hook}{phase} of {module} "
            f"({event.module_type}) call {event.call}): {reason}")
    if born is None:
        return head
    lines = [_GUARD_WORDS.get(line, line) for line in born.lines if not line.startswith(_APP_ADVICE)]
    return head + "\nWhere it was born:\n" + "\n".join("  " + line for line in lines)


# born.py's advice for the app; in the guard, find_node=True is what shows the node.
_APP_ADVICE = ("Set the non-finite breakpoint before backward", "With the non-finite breakpoint set before backward")
# The engine's words for the app, said as they hold in a guard (lines are noted inside the
# model's forward only, so a node made in the loss outside it has none).
_GUARD_WORDS = {
    "the line that created it is unknown (the non-finite breakpoint was set after the forward pass, "
    "or the op is hooktui's default loss)":
        "the line that created it is unknown: hooktui.guard notes the lines of the model's forward only",
}


def _save(info: TraceInfo, events: list[Event]):
    try:
        path = where.new_trace_path()
        write_trace(path, info, events)
    except (OSError, ValueError) as exc:  # the error is what matters: say why there is no file
        print(f"hooktui: guard could not save the step's firings: {exc}", file=sys.stderr)
        return None
    return path
