"""Where a bad value is *born*, firing by firing: what a `born_only` non-finite breakpoint
(`nan born`, `--break-nonfinite-born`) stops at, so that `c` goes from one newly born NaN to
the next instead of to every firing that carries the first one on.

Decided from records alone, in firing order (a live run, or a walk through a history
replayed from its start), with the order hooks fire in (engine/analysis/born.py says the same in
words for the first bad firing):

- a firing that *makes* values, `forward` (its output from its args / kwargs), `backward`
  (grad_input from grad_output) or `node` (grad_inputs from grad_outputs), is a birth when
  what it made is bad and what it received was not, unless a birth happened inside that
  call already (between its pre firing and this one: post-hooks fire innermost first, so
  the enclosing calls would only repeat it). A node's bad gradient for a parameter is not a
  birth: it is the finite arriving gradient times an activation kept from forward, which
  was bad already;
- any other bad firing (bad inputs at `forward_pre`, a bad gradient arriving at
  `backward_pre`, a `param_grad`) is a birth only while nothing bad has been seen since the
  pass's forward began: the value was made between module calls, by the loss, or came from
  outside the model (the data, a `.grad` left from an earlier step).

A breakpoint set in the middle of a pass knows only the calls it saw open.
Nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Callable

from ..records.records import Event, TensorRecord

# Per hook kind that makes values: (prefixes of what it received, prefixes of what it made).
_MAKERS = {
    "forward": (("args", "kwargs"), ("output",)),
    "backward": (("grad_output",), ("grad_input",)),
    "node": (("grad_outputs",), ("grad_inputs",)),
}
_SKIPPED = ("error", "user_hook", "legacy_backward")

Bad = Callable[[TensorRecord, str], "str | None"]


class Births:
    """Follows one run's firings for one notion of bad (a breakpoint's `tensor_reason`)."""

    def __init__(self, bad: Bad) -> None:
        self._bad = bad
        # The module calls open in the current phase: [phase, module, call, birth inside].
        self._open: list[list] = []
        self._tainted = False  # something bad seen since this pass's forward began
        self._phase: str | None = None

    def observe(self, event: Event) -> list[tuple[TensorRecord, str]]:
        """The bad tensors born at `event` (with the breakpoint's words), or []."""
        if event.phase == "forward" and self._phase == "backward":  # a new pass
            self._open.clear()
            self._tainted = False
        self._phase = event.phase
        if event.hook in _SKIPPED:
            return []
        frame = None
        if event.hook in ("forward_pre", "backward_pre"):
            self._open.append([event.phase, event.module, event.call, False])
        elif event.hook in ("forward", "backward"):
            frame = self._close(event)
        bad = [(t, words) for t in event.tensors if (words := self._bad(t, event.phase)) is not None]
        if not bad:
            return []
        born = self._born(event, bad, frame)
        self._tainted = True
        if born:
            for open_frame in self._open:
                open_frame[3] = True
            if frame is not None:
                frame[3] = True
        return born

    def _born(self, event: Event, bad: list, frame: list | None) -> list[tuple[TensorRecord, str]]:
        if not self._tainted:
            return bad
        sides = _MAKERS.get(event.hook)
        if sides is None or (frame is not None and frame[3]):
            return []
        received, made = sides
        if any(t.name.startswith(received) for t, _ in bad):
            return []
        # A parameter's gradient is the arriving gradient times an activation kept from
        # forward: bad while that gradient is finite means the activation was (carried).
        return [(t, words) for t, words in bad if t.name.startswith(made) and not (t.target or "").startswith("parameter")]

    def _close(self, event: Event) -> list | None:
        """Pop the call `event` ends (and any left open inside it); its frame, if it was open."""
        for i in range(len(self._open) - 1, -1, -1):
            phase, module, call, _ = self._open[i]
            if (phase, module, call) == (event.phase, event.module, event.call):
                frame = self._open[i]
                inside = any(f[3] for f in self._open[i:])
                del self._open[i:]
                frame[3] = frame[3] or inside
                return frame
        return None
