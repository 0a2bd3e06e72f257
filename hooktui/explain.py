"""Plain-words explanations of a firing, built only from recorded facts.

Each statement comes from the event and the trace around it (the forward firing of the
same call, the parameter-gradient firings of the module): nothing is chosen by model
name. Used by the UI's Explain pane; no Textual, no torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .engine.records.records import Event, TensorRecord, TraceInfo, firings_of, position_of
from .engine.records.user_hook_records import KIND_TEXT
from .engine.records.format import shape_text


@dataclass
class Statement:
    text: str
    # True: a check that holds (shape matches); False: one that does not; None: a fact.
    ok: bool | None = None


def explain(event: Event, events: Sequence[Event], info: TraceInfo | None = None) -> list[Statement]:
    who = _who(event)
    builder = _BUILDERS.get(event.hook, _generic)
    out = builder(event, events, who, info)
    return out if event.hook == "user_hook" else out + _user_hooks_nearby(event, events)


def _who(event: Event) -> str:
    name = event.module or "the root module"
    return f"`{name}` ({event.module_type}, call {event.call})"


def _forward_pre(event: Event, events, who: str, info) -> list[Statement]:
    out = [Statement(f"Forward pre-hook of {who}: runs just before its forward(), with the arguments it is called with.")]
    out += [_argument(t) for t in event.tensors]
    return out


def _forward(event: Event, events, who: str, info) -> list[Statement]:
    out = [Statement(f"Forward hook of {who}: runs just after its forward() returned.")]
    for tensor in event.tensors:
        if tensor.name.startswith("output"):
            made_by = f", made by {tensor.grad_fn} (backward for it starts at that node)" if tensor.grad_fn else ""
            no_grad = "" if tensor.requires_grad else "; it does not require grad, so this call will have no backward firing"
            out.append(Statement(f"`{tensor.name}`: returned by forward(), shape {shape_text(tensor)}{made_by}{no_grad}."))
        else:
            out.append(_argument(tensor))
    return out


def _backward_pre(event: Event, events, who: str, info) -> list[Statement]:
    header = (
        f"Full backward pre-hook of {who}: the gradient of the loss w.r.t. its outputs has just been "
        f"computed, and its own backward has not run yet."
    )
    return _gradient_firing(event, events, who, header, "output")


def _backward(event: Event, events, who: str, info) -> list[Statement]:
    header = (
        f"Full backward hook of {who}: the gradients w.r.t. its positional inputs are computed. "
        f"grad_input has one entry per positional argument; parameters are not in it."
    )
    return _gradient_firing(event, events, who, header, "input") + _param_grads(event, events, info)


def _gradient_firing(event: Event, events, who: str, header: str, side: str) -> list[Statement]:
    """The header, one statement per gradient (checked against the forward firing of the
    same call), then the firing's notes."""
    forward = _forward_of(event, events)
    return [Statement(header)] + [_gradient(t, side, forward, who) for t in event.tensors] + _notes(event)


def _legacy(event: Event, events, who: str, info) -> list[Statement]:
    node = event.grad_fn or "its output's autograd node"
    out = [
        Statement(
            f"Legacy register_backward_hook of {who}: PyTorch attaches it to {node}, the autograd node that "
            f"made the module's first output — the module's last op — not to the module itself. Its grad_input "
            f"is that node's input gradients."
        )
    ]
    for tensor in event.tensors:
        what = tensor.target or "?"
        shape = "None" if tensor.is_missing else shape_text(tensor)
        if tensor.name.startswith("grad_input"):
            out.append(Statement(f"`{tensor.name}`: gradient w.r.t. {what}, shape {shape}."))
        else:
            out.append(Statement(f"`{tensor.name}`: gradient w.r.t. {what}, shape {shape}."))
    # The engine's verdict: "legacy grad_input ≠ module inputs: ..." is a check that fails.
    return out + [Statement(s.text, ok=False if "≠" in s.text.split(":")[0] else None) for s in _notes(event)]


def _param_grad(event: Event, events, who: str, info) -> list[Statement]:
    out = [
        Statement(
            f"Parameter gradient of {who.split(' (')[0]}: AccumulateGrad has written `.grad` "
            f"(a post-accumulate-grad hook). This is where a parameter's gradient becomes visible."
        )
    ]
    for tensor in event.tensors:
        out.append(Statement(f"`{tensor.name}`: shape {shape_text(tensor)}, for parameter {tensor.target}."))
    out += _backward_hooks_around(event, events)
    return out + _notes(event)


def _final_grad(event: Event, events, who: str, info) -> list[Statement]:
    out = [
        Statement(
            f"Final gradient of {who.split(' (')[0]}: `.grad` as it was once the backward had returned, when the "
            f"wrapper's reduction over the ranks (DDP's all-reduce, FSDP1's reduce-scatter) has written it. This is "
            f"what the optimizer uses; the param_grad firing showed this rank's gradient before it."
        )
    ]
    for tensor in event.tensors:
        if tensor.is_missing:
            out.append(Statement(f"`{tensor.name}` of parameter {tensor.target}: none on this rank ({tensor.missing})."))
        else:
            part = f" ({tensor.note})" if tensor.note else ""
            out.append(Statement(f"`{tensor.name}`: shape {shape_text(tensor)}, for parameter {tensor.target}{part}."))
    targets = {t.target for t in event.tensors if t.target}
    grads = [e.number for e in firings_of(events, "param_grad") if any(t.target in targets for t in e.tensors)]
    if grads:
        out.append(Statement("This rank's gradient before it: param_grad " + ", ".join(f"#{n}" for n in grads) + "."))
    return out + _notes(event)


def _node(event: Event, events, who: str, info) -> list[Statement]:
    side = "receives the gradients of its outputs" if event.hook == "node_pre" else "has computed the gradients of its inputs"
    out = [Statement(f"Autograd node {event.grad_fn} (inside {who}) {side}.")]
    for tensor in event.tensors:
        shape = "None" if tensor.is_missing else shape_text(tensor)
        out.append(Statement(f"`{tensor.name}`: gradient w.r.t. {tensor.target or '?'}, shape {shape}."))
    return out + _notes(event)


def _user_hook(event: Event, events, who: str, info) -> list[Statement]:
    call = event.user_hook
    if call is None:
        return _generic(event, events, who, info)
    hook = call.hook
    on = f" on autograd node {event.grad_fn}" if event.grad_fn else ""
    out = [
        Statement(
            f"Your hook `{hook.function}` ({KIND_TEXT.get(hook.kind, hook.kind)} on {hook.owner}), defined at "
            f"{_short(hook.where)}, ran here{on}, for {who}."
        )
    ]
    if hook.kind.endswith("legacy_backward"):
        out.append(
            Statement(
                f"PyTorch attaches a legacy hook to the autograd node that made the module's first output — the "
                f"module's last op{f' ({event.grad_fn})' if event.grad_fn else ''} — so its grad_input holds that "
                f"node's input gradients, not the gradients w.r.t. the module's inputs."
            )
        )
        here = position_of(events, event.index, event.sub)
        forward = next((e for e in reversed(firings_of(events, "forward", event.module)) if e.key < event.key), None) if here else None
        mine, theirs = _tensor_named(event, "grad_input[0]"), _tensor_named(forward, "args[0]") if forward else None
        if mine is not None and theirs is not None and not mine.is_missing:
            same = mine.shape == theirs.shape
            out.append(
                Statement(
                    f"`grad_input[0]` has shape {shape_text(mine)}; `{event.module}`'s input args[0] has shape "
                    f"{shape_text(theirs)} {'✓' if same else '✗'}",
                    ok=same,
                )
            )
    for tensor in event.tensors:
        if tensor.name.startswith("returned ") or tensor.name.endswith(" after the hook"):
            continue
        shape = "None" if tensor.is_missing else shape_text(tensor)
        norm = f", norm {tensor.stats.norm:.4g}" if tensor.stats and tensor.stats.norm is not None else ""
        out.append(Statement(f"It received `{tensor.name}`: shape {shape}{norm}."))
    if call.returned == "raised":
        out.append(Statement(f"It raised {call.error}: the exception reaches the model's caller, as without hooktui.", ok=False))
    elif call.returned == "None" and not call.changes:
        out.append(Statement("It returned None and changed nothing: what it received goes on unchanged."))
    elif call.returned == "same":
        out.append(Statement("It returned what it received: nothing replaced."))
    for change in call.changes:
        out.append(Statement(f"It changed {change}."))
    return out + _notes(event)[1:]  # the first note names the hook: said above


def _user_hooks_nearby(event: Event, events: Sequence[Event]) -> list[Statement]:
    """The user hooks that ran right before or after this firing, for the same module."""
    near = []
    here = position_of(events, event.index, event.sub)
    for step in (-1, 1) if here is not None else ():
        i = here + step
        while 0 <= i < len(events) and events[i].hook == "user_hook":
            near.append(events[i])
            i += step
    out = []
    for other in sorted(near, key=lambda e: e.key):
        if other.user_hook is None or other.module != event.module or other.phase != event.phase:
            continue
        hook = other.user_hook.hook
        when = "before" if other.index < event.index else "after"
        effect = "; ".join(other.user_hook.changes) or (
            f"raised {other.user_hook.error}" if other.user_hook.returned == "raised" else "changed nothing"
        )
        out.append(Statement(f"Your hook `{hook.function}` at {_short(hook.where)} ran just {when} this (#{other.index}): {effect}."))
    return out


def _short(where: str) -> str:
    return where.rsplit("/", 1)[-1]


def _error(event: Event, events, who: str, info) -> list[Statement]:
    err = event.error
    text = f"{err.type}: {err.message}" if err else "the run failed"
    advice = [Statement(note[:1].upper() + note[1:] + ".", ok=False) for note in event.notes[1:]]  # what to do
    return [Statement(f"The model raised during {event.phase}, after firing of {who}: {text}", ok=False)] + advice


def _generic(event: Event, events, who: str, info) -> list[Statement]:
    return [Statement(f"{event.hook} firing of {who}.")] + [_argument(t) for t in event.tensors] + _notes(event)


_BUILDERS = {
    "forward_pre": _forward_pre,
    "forward": _forward,
    "backward_pre": _backward_pre,
    "backward": _backward,
    "legacy_backward": _legacy,
    "param_grad": _param_grad,
    "final_grad": _final_grad,
    "node_pre": _node,
    "node": _node,
    "error": _error,
    "user_hook": _user_hook,
}


# -- pieces ---------------------------------------------------------------------------
def _argument(tensor: TensorRecord) -> Statement:
    where = _position(tensor.name)
    grad = "requires grad" if tensor.requires_grad else "does not require grad"
    return Statement(f"`{tensor.name}`: {where}, shape {shape_text(tensor)}, {tensor.dtype}, {grad}.")


def inside_brackets(name: str, prefix: str) -> str:
    """`0` of `args[0]`, `mask` of `kwargs[mask]`: the text after `prefix` up to its `]`
    (a name from a trace file may lack it: `args[0`, then the rest)."""
    rest = name[len(prefix) :]
    end = rest.find("]")
    return rest if end < 0 else rest[:end]


def input_subject(target: str) -> str:
    """What a gradient's target names: `positional input 0` for `args[0]`, else the target."""
    return f"positional input {inside_brackets(target, 'args[')}" if target.startswith("args[") else target


def _position(name: str) -> str:
    if name.startswith("args["):
        return f"positional argument {inside_brackets(name, 'args[')}" + (f" ({name})" if name.count("[") > 1 else "")
    if name.startswith("kwargs["):
        return "keyword argument " + inside_brackets(name, "kwargs[")
    return name


def _gradient(tensor: TensorRecord, side: str, forward: Event | None, who: str) -> Statement:
    target = tensor.target or "?"
    subject = input_subject(target)
    label = f"`{tensor.name}`" + (" (an extra, not an argument of PyTorch's hook)" if tensor.extra else "")
    if tensor.is_missing:
        return Statement(f"{label} is None: {tensor.missing}.")
    text = f"{label}: gradient of the loss w.r.t. {subject} of {who}, shape {shape_text(tensor)}"
    if tensor.note:
        note = tensor.note if len(tensor.note) <= NOTE_CHARS else f"{tensor.note[:NOTE_CHARS]}… {len(tensor.note) - NOTE_CHARS} more characters"
        text += f" — {note}"
    original = _tensor_named(forward, target) if forward is not None else None
    if original is None:
        return Statement(text + ".")
    if original.shape == tensor.shape:
        return Statement(text + f" — same as that {side} ✓", ok=True)
    return Statement(text + f" — but that {side} has shape {shape_text(original)} ✗", ok=False)


NOTES_SHOWN = 20  # notes said in full; the rest are counted (a trace file may hold 1,000)
NOTE_CHARS = 2_000  # characters of one note said; the rest are counted


def _notes(event: Event) -> list[Statement]:
    out = [Statement(_sentence(note)) for note in event.notes[:NOTES_SHOWN]]
    if len(event.notes) > NOTES_SHOWN:
        out.append(Statement(f"… {len(event.notes) - NOTES_SHOWN} more notes"))
    return out


def _sentence(note: str) -> str:
    """A note as a sentence: capitalized, a full stop at its end, and cut to NOTE_CHARS."""
    if not note:
        return "(An empty note.)"
    if len(note) > NOTE_CHARS:
        note = f"{note[:NOTE_CHARS]}… {len(note) - NOTE_CHARS} more characters"
    return note[0].upper() + note[1:] + ("" if note.endswith(".") else ".")


def _param_grads(event: Event, events: Sequence[Event], info: TraceInfo | None) -> list[Statement]:
    grads = firings_of(events, "param_grad", event.module)
    out = []
    arrived = {t.target for e in grads for t in e.tensors}
    module = next((m for m in info.modules if m.name == event.module), None) if info else None
    for param in module.params if module else []:
        qualified = f"{event.module}.{param}" if event.module else param
        if qualified not in arrived:
            out.append(
                Statement(
                    f"`{qualified}`'s gradient is not in grad_input and has not been written to `.grad` yet: "
                    f"it arrives in its own param_grad firing."
                )
            )
    for grad in grads:
        for tensor in grad.tensors:
            when = "after" if grad.index > event.index else "before"
            out.append(
                Statement(
                    f"`{tensor.target}`'s gradient arrives at firing #{grad.index} (param_grad), {when} this hook: "
                    f"do not read `.grad` here and call it final."
                    if when == "after"
                    else f"`{tensor.target}`'s gradient arrived at firing #{grad.index} (param_grad), before this hook."
                )
            )
    return out


def _forward_of(event: Event, events: Sequence[Event]) -> Event | None:
    position = None if event.forward_index is None else position_of(events, event.forward_index)
    return None if position is None else events[position]


def _backward_hooks_around(event: Event, events: Sequence[Event]) -> list[Statement]:
    """When the module's full backward hooks fired, relative to a param_grad firing. A module
    called several times (a shared cell) has one per call, and the parameter's gradient sums
    them all: name each call, never one call's firing as "the" hook."""
    backwards = firings_of(events, "backward", event.module)
    if not backwards:
        return []
    if len(backwards) == 1:
        (backward,) = backwards
        order = "before" if backward.index < event.index else "after"
        return [Statement(f"The module's full backward hook fired {order} this, at firing #{backward.index}.")]
    before = ", ".join(f"#{e.index} (call {e.call})" for e in backwards if e.index < event.index)
    after = ", ".join(f"#{e.index} (call {e.call})" for e in backwards if e.index > event.index)
    text = f"The module's full backward hooks, one for each of its {len(backwards)} calls, fired"
    text += (f" before this at {before}" if before else "") + (" and" if before and after else "") + (f" after this at {after}" if after else "")
    return [Statement(text + ".")]


def _tensor_named(event: Event, name: str) -> TensorRecord | None:
    return next((t for t in event.tensors if t.name == name), None)
