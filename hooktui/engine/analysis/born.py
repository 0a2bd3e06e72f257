"""Where a bad value was born, in plain words, from the firings' records alone.

"Bad" is what a value breakpoint says of one tensor (engine/analysis/breakpoints.py): a NaN or an
Inf by default, or a statistic above a bound. The first firing with a bad tensor is where
it is first *seen*; where it was *made* follows from the order hooks fire in:

- forward: post-hooks fire innermost first, so the first `forward` firing with a bad
  output and good inputs is the innermost module call whose own code made it. A bad
  *input* at a `forward_pre` firing was made between module calls, by the code of the
  enclosing call (or came with the model's input).
- backward: a call whose `grad_output` was good and whose `grad_input` (or a parameter's
  gradient) is not made it in its own backward. While a non-finite breakpoint is on, the
  engine also emits the autograd node that did it as a `node` firing (engine/capture/hunt.py),
  with the forward line that created the node: that is the first bad firing then.
- a parameter's `.grad` that was already bad before the backward (a record whose note is
  of kind "held_grad", kept while hunting) came from outside this step.
- a `final_grad` (a parameter's `.grad` after DDP's or FSDP1's reduction) bad where this
  rank's own firings were not came from another rank.

Nothing here imports torch: `hooktui view` and `trace` explain a saved trace the same way.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..records import firing
from ..records import notes as note_kinds
from ..records.records import Event, TensorRecord, firing_number
from .breakpoints import Breakpoint

NONFINITE = Breakpoint.nonfinite()

# Why some ops' gradients are infinite where their forward is finite.
_OP_WHY = {
    "SqrtBackward0": "the derivative of sqrt(x), 1/(2·sqrt(x)), is infinite at x = 0",
    "LogBackward0": "the derivative of log(x), 1/x, is infinite at x = 0",
    "DivBackward0": "a division by zero in the gradient of a division (its divisor is 0)",
    "PowBackward0": "a power's gradient, p·x^(p-1), is infinite at x = 0 for p < 1",
    "RsqrtBackward0": "the derivative of rsqrt(x) is infinite at x = 0",
    "ReciprocalBackward0": "the derivative of 1/x is infinite at x = 0",
    "AcosBackward0": "the derivative of acos(x) is infinite at |x| = 1",
    "AsinBackward0": "the derivative of asin(x) is infinite at |x| = 1",
    "LinalgVectorNormBackward0": "the gradient of a norm divides by the norm: infinite or NaN when the norm is 0",
    "NormBackward1": "the gradient of a norm divides by the norm: infinite or NaN when the norm is 0",
    "StdBackward0": "the gradient of std divides by std: NaN or infinite when the std is 0",
}
_HALF_MAX = {"float16": "65504", "bfloat16": "about 3.4e38"}


@dataclass
class Born:
    seen: int  # index of the first firing with a bad tensor
    origin: int  # index of the firing that says where it was made (often `seen`)
    phase: str
    module: str
    call: int
    tensor: str  # the bad tensor's name at `origin`
    what: str  # e.g. "3 NaN", "norm 1.2e+04 > 1000"
    lines: list[str] = field(default_factory=list)  # the explanation, headline first
    origin_sub: int = 0  # the origin firing's sub-number (Event.sub: a node firing stepped into)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    @property
    def origin_key(self) -> tuple[int, int]:
        return (self.origin, self.origin_sub)

    @property
    def origin_number(self) -> str:
        return firing_number(self.origin, self.origin_sub)


def first_bad(events: Sequence[Event], bp: Breakpoint = NONFINITE, upto: int | tuple[int, int] | None = None) -> int | None:
    """Position of the first firing with a tensor `bp` calls bad, among the firings numbered
    at most `upto` (an index, or a Stop's key (index, sub): positions differ where a trace
    skips numbers, e.g. legacy firings left out of a saved file)."""
    last = (upto, 0) if isinstance(upto, int) else upto
    for position, event in enumerate(events):
        if last is not None and event.key > last:
            return None
        if _bad(event, bp):
            return position
    return None


def where_born(events: Sequence[Event], bp: Breakpoint = NONFINITE, upto: int | tuple[int, int] | None = None) -> Born | None:
    position = first_bad(events, bp, upto)
    if position is None:
        return None
    event = events[position]
    bad = _bad(event, bp)
    explain = _EXPLAIN.get(event.hook, _generic)
    return explain(events, position, event, bad, bp)


def _bad(event: Event, bp: Breakpoint) -> list[tuple[TensorRecord, str]]:
    if not firing.can_stop_at(event.hook):  # never a legacy firing, an error or the model's own hook
        return []
    # The breakpoint's own narrowing (a phase, a hook kind, a module glob) holds here too: a
    # gradient bound set for backward must not find a large forward activation first.
    if bp.phase is not None and event.phase != bp.phase or bp.hook is not None and event.hook != bp.hook:
        return []
    if not fnmatch.fnmatchcase(event.module, bp.module):
        return []
    return [(t, words) for t in event.tensors if (words := bp.tensor_reason(t, event.phase)) is not None]


def _good(bp: Breakpoint) -> str:
    return "finite" if bp.kind == "nonfinite" else f"within {bp.stat} ≤ {bp.bound:g}"


def _who(event: Event) -> str:
    name = event.module or "(root)"
    return f"{name} ({event.module_type}) call {event.call}"


def _where(event: Event) -> str:
    source = event.source
    if source is None:
        return ""
    # The file's name only: the whole path is the firing's source (the Source pane's).
    return f"{source.filename.replace(chr(92), '/').rsplit('/', 1)[-1]}:{source.lineno}: {source.line}".rstrip(": ")


def _made_by_notes(event: Event, name: str) -> list[str]:
    """The hunt's notes on where `name` was created (engine/capture/hunt.py), if any."""
    return [note for note in note_kinds.of_kind(event.notes, "not_finite") if note.about == name]


def _born(event: Event, position: int, seen: int, tensor: TensorRecord, words: str, lines: list[str]) -> Born:
    # Firing numbers, as `#N` everywhere says them (position == seen at every caller: the
    # firing that shows the bad value is the one that says where it was made).
    return Born(seen=event.index, origin=event.index, phase=event.phase, module=event.module, call=event.call,
                tensor=tensor.name, what=words, lines=lines, origin_sub=event.sub)


def _overflow(tensor: TensorRecord, words: str) -> list[str]:
    limit = _HALF_MAX.get(tensor.dtype or "")
    if limit and "Inf" in words:
        return [f"{tensor.name} is {tensor.dtype}: values above {limit} overflow to Inf there"]
    return []


# -- forward -------------------------------------------------------------------------------
def _forward_pre(events, position, event, bad, bp) -> Born:
    tensor, words = bad[0]
    if not event.module and event.call == 0:
        lines = [f"The model's input {tensor.name} already holds {words}: it came from outside the model "
                 "(the data, or the code that built the inputs)."]
        return _born(event, position, position, tensor, words, lines)
    stack, last = _forward_stack(events, position)
    passed = _passed_in(stack, tensor)
    if passed is not None:
        # A breakpoint scoped below the root (`--in 'features*'`) first sees the value where
        # a scoped call receives it: say where it really entered, not who received it.
        outer, outer_tensor = passed
        lines = [f"{tensor.name} of {_who(event)} already holds {words} when the module is called, unchanged from "
                 f"{outer_tensor.name} of {_who(outer)} (#{outer.number})."]
        if not outer.module and outer.call == 0:
            lines.append("That is the model's input: it came from outside the model (the data, or the code that "
                         "built the inputs); no module made it.")
        else:
            lines.append(f"{_who(outer)} received it so: look where it is called from.")
        return _born(event, position, position, tensor, words, lines)
    enclosing = stack[-1] if stack else None
    lines = [f"{tensor.name} of {_who(event)} already holds {words} when the module is called."]
    maker = f" by {tensor.grad_fn}" if tensor.grad_fn else ""
    if enclosing is not None:
        lines.append(f"It was made{maker} in the forward of {_who(enclosing)}, by its own code between module calls "
                     "(no module call returned it).")
    if last is not None:
        lines.append(f"The last module call before it, {_who(last)} (#{last.index}), returned {_good(bp)} values.")
    lines += _made_by_notes(event, tensor.name)
    where = _where(event)
    if where:
        lines.append(f"{event.module or '(root)'} is called at {where}")
    return _born(event, position, position, tensor, words, lines)


def _forward(events, position, event, bad, bp) -> Born:
    outputs = [(t, w) for t, w in bad if t.name.startswith("output")]
    tensor, words = outputs[0] if outputs else bad[0]
    if not outputs:  # an input went bad in place during the call
        lines = [f"{tensor.name} of {_who(event)} holds {words} after the call, though it was finite when the call began: "
                 "the module changed its input in place."]
        return _born(event, position, position, tensor, words, lines)
    lines = [f"{_who(event)} turned {_good(bp)} inputs into {words} in {tensor.name}: its own forward made it."]
    if tensor.grad_fn:
        lines.append(f"The op that made {tensor.name}: {tensor.grad_fn}.")
    lines += _overflow(tensor, words)
    lines += _made_by_notes(event, tensor.name)
    lines.append("No module call inside it returned a bad value: the op is in this module's own forward code.")
    where = _where(event)
    if where:
        lines.append(f"It is called at {where}")
    return _born(event, position, position, tensor, words, lines)


def _passed_in(stack: list[Event], tensor: TensorRecord) -> tuple[Event, TensorRecord] | None:
    """The outermost open call whose forward_pre received a tensor with `tensor`'s exact
    summary (shape, dtype, statistics): the value was passed down unchanged from there."""
    if tensor.stats is None:
        return None
    for outer in stack:
        for other in outer.tensors:
            if (not other.is_missing and other.name.startswith(("args", "kwargs")) and other.shape == tensor.shape
                    and other.dtype == tensor.dtype and other.stats == tensor.stats):
                return outer, other
    return None


def _forward_stack(events, position) -> tuple[list[Event], Event | None]:
    """The forward_pre firings of the module calls open around `position` in forward,
    outermost first, and the last call that ended."""
    stack: list[Event] = []
    last = None
    for event in events[:position]:
        if event.phase != "forward":
            continue
        if event.hook == "forward_pre":
            stack.append(event)
        elif event.hook == "forward":
            while stack and (stack[-1].module, stack[-1].call) != (event.module, event.call):
                stack.pop()
            if stack:
                stack.pop()
            last = event
    return stack, last


# -- backward ------------------------------------------------------------------------------
def _node(events, position, event, bad, bp) -> Born:
    computed = [(t, w) for t, w in bad if t.name.startswith("grad_inputs")] or bad
    tensor, words = computed[0]
    op = event.grad_fn or (event.node.name if event.node is not None else "an autograd node")
    outside = bool(note_kinds.of_kind(event.notes, "made_outside"))
    where = "outside every module call (the loss, or code between module calls)" if outside else f"in the backward of {_who(event)}"
    lines = [f"Autograd node {op}, {where}, turned {_good(bp)} gradients into {words} in "
             f"{tensor.name} (the gradient for {tensor.target or '?'})."]
    if op in _OP_WHY:
        lines.append(f"Likely why: {_OP_WHY[op]}.")
    lines += note_kinds.of_kind(event.notes, "created_at", "created_unknown")  # Notes: the guard says them in its words
    return _born(event, position, position, tensor, words, lines)


def _backward_pre(events, position, event, bad, bp) -> Born:
    tensor, words = bad[0]
    lines = [f"The gradient arriving at {_who(event)}, {tensor.name}, already holds {words}."]
    lines.append("It was made after this call's output in the graph, outside every module call whose backward fired "
                 "before (the loss, or code between module calls).")
    if bp.kind == "nonfinite":
        lines.append("With the non-finite breakpoint set before backward starts (--break-nonfinite, or ! before "
                     "the run reaches backward), the autograd node that made it is shown as a node firing.")
    return _born(event, position, position, tensor, words, lines)


def _backward(events, position, event, bad, bp) -> Born:
    tensor, words = bad[0]
    pre = next((e for e in reversed(events[:position]) if e.hook == "backward_pre"
                and (e.module, e.call) == (event.module, event.call)), None)
    lines = [f"{_who(event)} received a {_good(bp)} grad_output"
             + (f" (#{pre.index})" if pre is not None else "")
             + f" and its backward made {words} in {tensor.name} (the gradient for {tensor.target or '?'})."]
    if bp.kind == "nonfinite":
        lines.append("Set the non-finite breakpoint before backward starts to see the autograd node inside it that "
                     "made it, and the forward line that created that node.")
    return _born(event, position, position, tensor, words, lines)


def _param_grad(events, position, event, bad, bp) -> Born:
    before = [(t, w) for t, w in bad if t.extra and note_kinds.kind_of(t.note) == "held_grad"]
    if before:
        tensor, words = before[0]
        param = tensor.target or tensor.name
        lines = [f"The .grad of {param} already held {words} before this backward started: it came from outside "
                 "this step (a previous backward not zeroed with zero_grad(), or code that wrote .grad). "
                 "This backward adds its gradient to it."]
        fresh = [t for t in event.tensors if not t.extra and not t.is_missing]
        return _born(event, position, position, fresh[0] if fresh else tensor, words, lines)
    tensor, words = bad[0]
    lines = [f"The gradient of parameter {tensor.target or tensor.name} holds {words} as it is accumulated into .grad; "
             f"the gradients of the module outputs of {_who(event)} were {_good(bp)} so far."]
    return _born(event, position, position, tensor, words, lines)


def _final_grad(events, position, event, bad, bp) -> Born:
    tensor, words = bad[0]
    lines = [(f"The final .grad of {tensor.target or tensor.name} holds {words} once the backward has returned, while "
              f"this rank's firings before it were {_good(bp)}: it came from another rank, in what the wrapper reduced "
              "over the ranks (DDP's all-reduce, FSDP1's reduce-scatter). Look at the other ranks' traces.")]
    return _born(event, position, position, tensor, words, lines)


def _generic(events, position, event, bad, bp) -> Born:
    tensor, words = bad[0]
    lines = [f"{tensor.name} of {_who(event)} ({event.hook} firing) holds {words}."]
    return _born(event, position, position, tensor, words, lines)


_EXPLAIN = {
    "forward_pre": _forward_pre,
    "forward": _forward,
    "node": _node,
    "node_pre": _node,
    "backward_pre": _backward_pre,
    "backward": _backward,
    "param_grad": _param_grad,
    "final_grad": _final_grad,
}
