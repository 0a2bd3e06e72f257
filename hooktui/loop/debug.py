"""`hooktui.debug(model, step)`: one step of the user's own program under the debugger.

The step (a callable returning the loss, or a model's inputs and a loss_fn) runs forward
and backward with every firing recorded, as a real training step: `.grad` accumulates and
buffers move exactly as with a plain `loss.backward()`, and nothing of hooktui stays on
the model. With a terminal the app opens on it (the step on a worker thread, under the
caller's grad mode and autocast: engine/run/thread_state.py); without one, or on a rank other
than HOOKTUI_RANK, the step is recorded to a trace file (where.py). Then the program goes
on: `debug` returns the loss, raises the step's own exception if it raised one, or
raises hooktui.Quit when the app was quit before the step ended.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from ..engine.analysis.breakpoints import Breakpoint
from ..engine.records import firing
from ..engine.run.one_run import claimed
from ..engine.run.pipeline import is_schedule, stage_of
from ..engine.run.session import Session, Trace
from ..engine.run.thread_state import ThreadState
from ..engine.capture.contain import failure_text
from ..engine.records.trace_file import write_trace
from . import in_app, say, where
from .errors import Quit
from .guard import set_aside

ON_QUIT = ("raise", "return")


def debug(model: nn.Module, step: Any, loss_fn: Callable[[Any], torch.Tensor] | None = None, *, on_quit: str = "raise",
          losses: list | None = None) -> torch.Tensor | None:
    """Run one training step of `model` under hooktui and return its loss (detached).

    `step`: a zero-argument callable that runs the forward and returns the loss
    (`lambda: criterion(model(x), y)`; with a GradScaler return `scaler.scale(loss)`: backward
    starts from what the step returns). Or the model's inputs, with an optional `loss_fn`
    (the model-file style). Backward runs as `loss.backward()`: afterwards `.grad` holds
    what a plain step leaves (added to gradients already there), so `optimizer.step()`
    trains as without hooktui.

    A pipeline schedule (torch.distributed.pipelining, one stage on this rank): give the
    schedule as `model` and a step that calls its `step()`, with `losses=` the list given to
    it on the last stage: `debug(schedule, lambda: schedule.step(target=y, losses=losses),
    losses=losses)`. This rank's stage module is traced; the schedule runs every
    microbatch's forward and backward itself, and `debug` returns the mean of `losses`
    (None on a stage before the last). A step that runs its own backward on a plain module
    returns None (or pass `losses=`).

    With a terminal the app opens; `q` before the step ended raises hooktui.Quit
    (`on_quit="return"`: the rest of the step runs without pausing and `debug` returns).
    Without one (or on a rank other than HOOKTUI_RANK) the step is recorded to a trace
    file whose name is printed on stderr. An exception raised by the step is raised again
    here, once it has been shown.
    """
    if on_quit not in ON_QUIT:
        raise ValueError(f"on_quit must be one of {ON_QUIT}, got {on_quit!r}")
    schedule = is_schedule(model)
    if not isinstance(model, nn.Module) and not schedule:
        raise TypeError(f"hooktui.debug needs the model (an nn.Module, or a pipeline schedule) first, got {type(model).__name__}")
    user_step = step if callable(step) and not isinstance(step, (torch.Tensor, nn.Module)) else None
    if user_step is not None and loss_fn is not None:
        raise TypeError("hooktui.debug: loss_fn goes with inputs; a step callable computes its loss itself")
    if user_step is None and (schedule or losses is not None):
        raise TypeError("hooktui.debug: a pipeline schedule runs under a step that calls its step(): "
                        "debug(schedule, lambda: schedule.step(...))")
    with claimed("debug"):
        return _debug(model, step, loss_fn, user_step, on_quit, losses)


def trainer_step(model: nn.Module, step: Callable[[], None], losses: list, *, record: bool, site: str, loss_label: str,
                 tag: str, on_quit: str = "raise") -> torch.Tensor | None:
    """One step of a trainer's own loop (a Lightning or Hugging Face callback: hooktui/integrations/):
    `step` runs the trainer's forward and backward itself and puts its loss in `losses`.
    `record`: to a trace file named with `tag` (hooktui-<pid>-<n>-<tag>.jsonl), never the
    app; otherwise as `debug`: the app where there is a terminal. `site` names the step
    where a call site would (the app's title, hooktui.Quit's line)."""
    if on_quit not in ON_QUIT:
        raise ValueError(f"on_quit must be one of {ON_QUIT}, got {on_quit!r}")
    with claimed("debug"):
        return _debug(model, None, None, step, on_quit, losses, site=site, record=record, loss_label=loss_label, tag=tag)


def _debug(model: nn.Module, step: Any, loss_fn, user_step, on_quit: str, losses: list | None, *, site: str | None = None,
           record: bool = False, loss_label: str | None = None, tag: str | None = None) -> torch.Tensor | None:
    call_site = site or where.call_site()
    app = not record and where.opens_app()
    distributed = where.process_rank() is not None
    path = where.new_trace_path(tag) if distributed or not app else None  # checked before the step runs
    pid = os.getpid()
    session = Session(
        model,
        None if user_step is not None else step,
        loss_fn,
        step=user_step,
        restore_model=False,
        thread_state=ThreadState.capture(),
        quit_finishes=on_quit == "return",
        pause=app,
        label=f"{_name(model)} ({call_site})" if site else f"{_name(model)} (hooktui.debug at {call_site})",
        losses=losses,
        loss_label=loss_label,
        legacy=app,  # the app can show legacy firings (L); a recording counts them only (engine/records/firing.py)
    )
    with set_aside(session.model):  # a hooktui.guard on this model: this step is debug's
        if app:
            session.gate.skip_hooks.add("legacy_backward")
            in_app.debug_in_app(session, call_site, on_quit)
        else:
            # Recorded, it hunts as the guard does (engine/hunt.py): the autograd node that makes
            # a NaN/Inf is a node firing, so the file says where it was born as the guard would.
            # The gate runs freely: nothing pauses, nothing stops.
            session.add_breakpoint(Breakpoint.nonfinite())
            session.run()
    # Only the process that called debug() writes its trace: a process the step forked
    # (os.fork, a fork-started worker) that unwinds through here with sys.exit must not
    # replace the parent's file with its own few firings.
    if path is not None and os.getpid() == pid:
        _save(session.trace, path)
    return _outcome(session.trace, call_site)


def _outcome(trace: Trace, call_site: str) -> torch.Tensor:
    if trace.state == "quit":
        raise Quit(call_site)
    if trace.exception is not None:
        exception, trace.exception = trace.exception, None
        _add_advice(exception, trace)
        raise exception  # the step's own exception, as the program would have seen it
    assert trace.state == "finished", trace.state
    return trace.loss  # None only where the step ran its own backward and gave no loss


def _name(model: Any) -> str:
    if not is_schedule(model):
        return type(model).__name__
    module, pipeline, stage = stage_of(model)
    return f"{type(module).__name__} ({stage} of {pipeline.schedule})"


def _add_advice(exception: BaseException, trace: Trace) -> None:
    """The error firing's advice (a device mismatch's fix), as a note under the step's own
    traceback (Python 3.11+; without add_note the exception is raised as it is)."""
    error = trace.events[-1] if trace.events and trace.events[-1].hook == "error" else None
    add_note = getattr(exception, "add_note", None)
    if error is None or add_note is None:
        return
    for advice in error.notes[1:]:
        note = f"hooktui: {advice}"
        if note not in getattr(exception, "__notes__", ()):
            add_note(note)


def _save(trace: Trace, path) -> None:
    events = firing.shown(trace.events)  # their numbers as in the app, legacy ones skipped
    try:
        write_trace(path, trace.info, events)
    except OSError as exc:  # the step has run: say so, and let the program go on
        say.warn(f"could not save the trace to {path}: {exc.strerror or exc}")
        return
    except Exception as exc:  # hooktui's own failure: never in place of the step's loss or exception
        say.warn(f"could not save the trace to {path}: {failure_text(exc)}")
        return
    rank = where.process_rank()
    who = "" if rank is None else f"rank {rank}: "
    name = where.shown(path)
    say.info(f"{who}recorded the step ({len(events)} firings) to {name}; open it with: hooktui view {name}")
