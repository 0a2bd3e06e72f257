"""One run's lifecycle on a model, shared by `Session` (a run hooktui starts: record,
trace, the app, debug) and `hooktui.guard` (one for every step of the user's loop).

A run, in this order:

1. `TracedRun(...)`: the tracer and the model's own hooks found (user_hooks.py), nothing
   installed yet.
2. `begin()`: the run's budget for device summaries (lazy_stats.py).
3. `install()`: the model's own hooks wrapped first, then the tracer's, so the tracer's
   are never taken for the user's.
4. While it runs: the line that created each forward op while hunting
   (`note_creation_lines` / `stop_creation_lines`, hunt.py).
5. `remove_hooks()`: the tracer's hooks off and the user's functions given back, each
   whatever the other does. A failure there is hooktui's: noted on the run's firings
   (contain.py) or handed to the caller's `failed`, never raised into the user's run.
6. `end()`: creation lines stopped, the device summaries copied to the host once (or, for
   a guard's clean step that nobody will read, dropped uncopied), the run's budget and the
   autograd nodes' records let go.

What differs stays with the caller: the session puts the model's state back, holds the
collector off and records the model's own error; the guard tells steps apart (the
tracer's `on_backward_start` / `on_backward_end`, and hooks of its own on the root) and
checks every firing.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import nn

from ..autograd import nodes
from ..capture import hunt
from ..capture.model_walk import ModelWalk, walk_of
from ..capture.tracer import Emit, LiveFiring, OnBackward, Tracer
from ..capture.user_hooks import UserHooks
from ..summaries import lazy_stats
from ..summaries.stats import StatsOptions

Failed = Callable[[str, Exception], None]

__all__ = ["Emit", "Failed", "LiveFiring", "OnBackward", "TracedRun"]


class TracedRun:
    """The hooks of one run on `model`: `tracer` (its firings reach `emit`) and `user_hooks`."""

    def __init__(
        self,
        model: nn.Module,
        emit: Emit,
        options: StatsOptions | None = None,
        *,
        walk: ModelWalk | None = None,
        user_hooks: UserHooks | None = None,
        legacy: bool = False,
        param_grads: bool = True,
        on_backward_start: OnBackward | None = None,
        on_backward_end: OnBackward | None = None,
    ) -> None:
        self.model = model
        self.walk = walk if walk is not None else walk_of(model)
        # The model's own hooks (found now; those registered during the run are added).
        self.user_hooks = user_hooks if user_hooks is not None else UserHooks(model, self.walk)
        self.tracer = Tracer(model, emit, options, legacy=legacy, param_grads=param_grads, walk=self.walk,
                             on_backward_start=on_backward_start, on_backward_end=on_backward_end)
        self._lines: hunt.CreationLines | None = None
        self._compiled: bool | None = None  # known at the first note_creation_lines

    def begin(self) -> None:
        """The run's device summaries get a budget of their own (lazy_stats.py)."""
        lazy_stats.start_run()

    def install(self) -> Tracer:
        self.user_hooks.install(self.tracer)  # first: the tracer's own hooks are not the user's
        self.tracer.install()
        return self.tracer

    # -- while it runs ---------------------------------------------------------------
    def note_creation_lines(self) -> None:
        """From now on, each forward op notes the line that created it (hunt.py). Never on
        a torch.compile'd model: the compiler would trace the mode's Python into the
        model's graph (graph breaks at each op, another compiled graph, gradients that
        differ in the last bits); its autograd nodes are the compiled graph's own anyway."""
        if self._compiled is None:
            self._compiled = any(_is_compiled(m) for _, m in self.walk.modules)
        if self._lines is None and not self._compiled:
            self._lines = hunt.CreationLines()
            self._lines.__enter__()

    def stop_creation_lines(self) -> None:
        if self._lines is not None:
            lines, self._lines = self._lines, None
            lines.__exit__(None, None, None)

    # -- the end -----------------------------------------------------------------------
    def remove_hooks(self, failed: Failed | None = None) -> None:
        """Each, whatever the other does; a failure is hooktui's, noted (contain.py) or
        handed to `failed(where, exc)`, never the run's."""
        tracer = self.tracer
        failed = failed if failed is not None else tracer.contain.failed
        for where, remove in (("removing its hooks", tracer.remove),
                              ("giving your hooks back their own functions", self.user_hooks.remove)):
            try:
                remove()
            except Exception as exc:
                failed(where, exc)

    def end(self, discard: list | None = None) -> None:
        """After `remove_hooks`: device summaries reach the host once, here, unless they are
        `discard`ed (summaries nobody will read: never copied)."""
        self.stop_creation_lines()
        if discard is None:
            lazy_stats.flush_pending()
        else:
            lazy_stats.discard_pending(discard)
        lazy_stats.end_run()
        nodes.forget_node_records()


def _is_compiled(module: nn.Module) -> bool:
    """torch.compile(module) (an OptimizedModule) or module.compile()."""
    return type(module).__name__ == "OptimizedModule" or getattr(module, "_compiled_call_impl", None) is not None
