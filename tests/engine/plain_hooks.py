"""Reference firings from PyTorch's own module hooks, for comparison with hooktui's.

Nothing here uses hooktui: `plain_firings` installs `register_forward_pre_hook`,
`register_forward_hook`, `register_full_backward_pre_hook` and
`register_full_backward_hook` on every module, runs forward and backward, and writes
down what PyTorch hands to those hooks. `engine_firings` turns a hooktui trace into the
same shape so the two lists can be compared with `==`.

Call numbers in backward: PyTorch's hooks do not say which call of a module a backward
firing belongs to, so the forward hooks tag autograd nodes (`node.metadata`) with the
call number and the backward hooks read the tag back from the node that is running
(`torch._C._current_autograd_node()`: a `BackwardHookFunctionBackward` whose
`next_functions` are the call's real output nodes, or which wraps the call's inputs).
"""

from __future__ import annotations

import importlib.util
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

_TAG = "plain_hooks_call"
SAMPLES = Path(__file__).resolve().parents[2] / "sample_models"


def load_sample(name: str):
    """A fresh import of sample_models/NAME.py."""
    spec = importlib.util.spec_from_file_location(f"sample_{name}", SAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def seeded(cls, *a):
    """A builder of `cls(*a)` with torch's seed set first: two calls give identical twins."""

    def build():
        torch.manual_seed(0)
        return cls(*a)

    return build


def randn(*shape, requires_grad=False, seed=1):
    """A maker of the same seeded random tensor on every call."""

    def make():
        g = torch.Generator().manual_seed(seed)
        return torch.randn(*shape, generator=g).requires_grad_(requires_grad)

    return make


@dataclass
class Firing:
    hook: str
    module: str
    call: int
    # forward_pre: positional tensor args (and tensors nested in them); forward: args then outputs;
    # backward_pre: grad_output; backward: grad_input. None where PyTorch gave None.
    tensors: list[torch.Tensor | None] = field(default_factory=list)
    grad_fn: str | None = None

    def key(self) -> tuple:
        shapes = tuple(None if t is None else tuple(t.shape) for t in self.tensors)
        return (self.hook, self.module, self.call, shapes)


def _flat(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _flat(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _flat(v)]
    return []


def _tag(node, name: str, call: int) -> None:
    if node is not None:
        node.metadata.setdefault(_TAG, {})[name] = call


def _call_of(node, name: str) -> int | None:
    """The call number the forward hooks left on the running node or its next nodes."""
    if node is None:
        return None
    tags = node.metadata.get(_TAG, {})
    if name in tags:
        return tags[name]
    for nxt, _ in node.next_functions:
        if nxt is not None and name in nxt.metadata.get(_TAG, {}):
            return nxt.metadata[_TAG][name]
    return None


def _hookable(model: nn.Module) -> list[nn.Module]:
    """Every module PyTorch lets a hook on: not a TorchScript one (nor those inside it)."""
    return [m for m in model.modules() if not isinstance(m, torch.jit.ScriptModule)]


def default_loss(output: Any) -> torch.Tensor:
    """Sum of every floating-point output that requires grad (written here, not imported)."""
    parts = [t.sum().float() for t in _flat(output) if t.is_floating_point() and t.requires_grad]
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    return total


def plain_firings(model: nn.Module, args: tuple = (), kwargs: dict | None = None, loss_fn=None, step=None) -> tuple[list[Firing], Any]:
    """Forward + backward with PyTorch's module hooks on every module; (firings, output).
    `step(model)`: instead of `model(*args)` and the loss, runs the forward (and any
    backward of its own) and returns the loss that is then backpropagated."""
    kwargs = kwargs or {}
    names = {id(m): n for n, m in model.named_modules()}
    counts: dict[str, int] = {}
    stacks: dict[str, list[int]] = {}
    log: list[Firing] = []
    handles = []

    def clone(t):
        return None if t is None else t.detach().clone()

    def pre(module, a):
        name = names[id(module)]
        call = counts.get(name, 0)
        counts[name] = call + 1
        stacks.setdefault(name, []).append(call)
        # Tensors nested in an argument (a PackedSequence) too, as hooktui records them.
        log.append(Firing("forward_pre", name, call, [clone(t) for t in _flat(a)]))

    def post(module, a, output):
        name = names[id(module)]
        call = stacks[name].pop()
        outs = _flat(output)
        for t in outs:
            _tag(t.grad_fn, name, call)
        # With full backward hooks the args seen here are wrapped: their grad_fn is the
        # BackwardHookFunctionBackward that the grad_input hook runs on.
        for t in a:
            if isinstance(t, torch.Tensor):
                _tag(t.grad_fn, name, call)
        tensors = [clone(t) for t in _flat(a)] + [clone(t) for t in outs]
        log.append(Firing("forward", name, call, tensors))

    def call_in_backward(name):
        call = _call_of(torch._C._current_autograd_node(), name)
        # A leaf output (a Parameter returned as is) leaves no node to tag; a module called
        # once needs none.
        return 0 if call is None and counts.get(name) == 1 else call

    def bpre(module, grad_output):
        name = names[id(module)]
        call = call_in_backward(name)
        log.append(Firing("backward_pre", name, call, [clone(g) for g in grad_output]))

    def bwd(module, grad_input, grad_output):
        name = names[id(module)]
        call = call_in_backward(name)
        log.append(Firing("backward", name, call, [clone(g) for g in grad_input]))

    for module in _hookable(model):
        handles.append(module.register_forward_pre_hook(pre))
        handles.append(module.register_forward_hook(post))
        handles.append(module.register_full_backward_pre_hook(bpre))
        handles.append(module.register_full_backward_hook(bwd))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Full backward hook is firing when ..." is expected
            if step is not None:
                output = loss = step(model)
            else:
                output = model(*args, **kwargs)
                loss = (loss_fn or default_loss)(output)
            loss.backward()
    finally:
        for handle in handles:
            handle.remove()
    return log, output


def plain_grad_fns(model: nn.Module, args: tuple = (), kwargs: dict | None = None) -> dict[tuple[str, int], str | None]:
    """`output.grad_fn.name()` of each call's first output tensor, seen in a plain forward
    hook with no backward hooks installed (so no wrapper node is in the way)."""
    names = {id(m): n for n, m in model.named_modules()}
    counts: dict[str, int] = {}
    stacks: dict[str, list[int]] = {}
    found: dict[tuple[str, int], str | None] = {}

    def pre(module, a):
        name = names[id(module)]
        stacks.setdefault(name, []).append(counts.get(name, 0))
        counts[name] = counts.get(name, 0) + 1

    def post(module, a, output):
        name = names[id(module)]
        call = stacks[name].pop()
        node = next((t.grad_fn for t in _flat(output) if t.grad_fn is not None), None)
        found[(name, call)] = None if node is None else node.name()

    handles = [h for m in _hookable(model) for h in (m.register_forward_pre_hook(pre), m.register_forward_hook(post))]
    try:
        model(*args, **(kwargs or {}))
    finally:
        for handle in handles:
            handle.remove()
    return found


def engine_firings(trace) -> list[tuple]:
    """hooktui events as `Firing.key()` tuples (kwargs tensors left out: PyTorch's hooks
    do not see them in forward_pre / forward without with_kwargs)."""
    keys = []
    for event in trace.events:
        if event.hook == "error":
            keys.append(("error", event.module, event.call, ()))
            continue
        # Extras (gradients of tensors nested in an output) have no PyTorch twin.
        tensors = [t for t in event.tensors if not t.extra]
        if event.hook in ("forward_pre", "forward"):
            tensors = [t for t in tensors if not t.name.startswith("kwargs[")]
        keys.append((event.hook, event.module, event.call, tuple(None if t.shape is None else tuple(t.shape) for t in tensors)))
    return keys


def assert_record_matches(record, tensor: torch.Tensor | None, *, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """A hooktui TensorRecord describes `tensor`: shape, every value, mean/min/max."""
    if tensor is None:
        assert record.shape is None, f"{record.name}: PyTorch gave None, hooktui {record.shape}"
        assert record.missing
        return
    assert record.shape == list(tensor.shape), record.name
    assert record.dtype == str(tensor.dtype).removeprefix("torch."), record.name
    expected = tensor.detach().double().reshape(-1)
    block = tensor.detach()[tuple(slice(0, k) for k in record.values_shape)].double().reshape(-1)
    got = torch.tensor(record.values, dtype=torch.float64)
    assert torch.allclose(got, block, rtol=rtol, atol=atol, equal_nan=True), f"{record.name}: {got} != {block}"
    finite = expected[torch.isfinite(expected)]
    if finite.numel():
        assert math.isclose(record.stats.mean, finite.mean().item(), rel_tol=rtol, abs_tol=atol), record.name
        assert math.isclose(record.stats.min, finite.min().item(), rel_tol=rtol, abs_tol=atol), record.name
        assert math.isclose(record.stats.max, finite.max().item(), rel_tol=rtol, abs_tol=atol), record.name
    assert record.stats.nan == int(torch.isnan(expected).sum())
    assert record.stats.posinf == int(torch.isposinf(expected).sum())
    assert record.stats.neginf == int(torch.isneginf(expected).sum())


def hooks_left(model: nn.Module) -> list[str]:
    """Every module hook still installed on `model`, and every global module hook."""
    left = []
    for name, module in model.named_modules():
        for attr in ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks",
                     "_forward_hooks_with_kwargs", "_forward_pre_hooks_with_kwargs", "_forward_hooks_always_called"):
            if getattr(module, attr, None):
                left.append(f"{name or '(root)'}.{attr}")
    import torch.nn.modules.module as mm

    for attr in ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks",
                 "_global_backward_pre_hooks", "_global_forward_hooks_always_called", "_global_forward_hooks_with_kwargs"):
        if getattr(mm, attr, None):
            left.append(attr)
    return left


MODULE_HOOKS = ("forward_pre", "forward", "backward_pre", "backward", "error")


def record_all(model, inputs, loss_fn=None):
    """hooktui.record keeping every value of every tensor (these test models are small)."""
    import hooktui
    from hooktui.engine.summaries.stats import StatsOptions

    return hooktui.record(model, inputs, loss_fn, options=StatsOptions(max_values=1 << 20))


def assert_same_as_pytorch(build, make_inputs, loss_fn=None, *, engine_only=None, ignore=None, build_plain=None,
                           rename=None) -> list:
    """hooktui's trace of `build()` on `make_inputs()` fires exactly what PyTorch's full
    module hooks fire on a second, identical copy: same sequence, same call numbers, same
    tensors (None where PyTorch gives None, zeros where it gives zeros), same values, and
    the forward grad_fn names a plain forward hook sees. Returns the hooktui events.

    `engine_only(event)`: firings hooktui makes and PyTorch does not (left out of the
    comparison; the caller checks them). `ignore(hook, module)`: firings left out on both sides.
    `build_plain`: PyTorch's hooks run on this model instead (an out-of-place twin of an
    in-place model, with the same weights); forward values are then not compared (an
    in-place op changes what a forward hook sees), backward values are. `rename(raw)`: the
    name hooktui shows for PyTorch's module name `raw` (a wrapper's prefix dropped), written
    out by the caller."""
    from hooktui.engine.run.inputs import split_inputs

    args, kwargs = split_inputs(make_inputs())
    expected, _ = plain_firings((build_plain or build)(), args, kwargs, loss_fn)
    if rename is not None:
        for firing in expected:
            firing.module = rename(firing.module)
    trace = record_all(build(), make_inputs(), loss_fn)
    assert not trace.failed, trace.error and trace.error.traceback
    # Only the module hook kinds have a PyTorch twin here; param_grad firings are checked
    # against param.grad in test_param_grads.py.
    trace.events = [e for e in trace.events if e.hook in MODULE_HOOKS]
    if engine_only is not None:
        trace.events = [e for e in trace.events if not engine_only(e)]
    if ignore is not None:
        trace.events = [e for e in trace.events if not ignore(e.hook, e.module)]
        expected = [f for f in expected if not ignore(f.hook, f.module)]
    got = engine_firings(trace)
    want = [f.key() for f in expected]
    assert got == want, "\n".join(f"{g}  |  {w}" for g, w in zip(got + [None] * len(want), want + [None] * len(got)) if g != w)

    for event, firing in zip(trace.events, expected):
        records = [t for t in event.tensors if not t.extra]
        if event.hook.startswith("forward"):
            if build_plain is not None:
                continue
            records = [t for t in records if not t.name.startswith("kwargs[")]
        for record, tensor in zip(records, firing.tensors):
            assert_record_matches(record, tensor)

    nodes = plain_grad_fns((build_plain or build)(), args, kwargs)
    if rename is not None:
        nodes = {(rename(k[0]), *k[1:]): v for k, v in nodes.items()}
    if ignore is not None:
        nodes = {k: v for k, v in nodes.items() if not ignore("forward", k[0])}
    forward = {(e.module, e.call): e for e in trace.events if e.hook == "forward"}
    # Calls made during backward (activation checkpointing recomputes) have no twin in a
    # plain forward.
    assert {k: e.grad_fn for k, e in forward.items() if e.phase == "forward"} == nodes
    for event in trace.events:
        if event.hook == "backward_pre":
            call = forward[(event.module, event.call)]
            assert event.grad_fn == call.grad_fn
            assert event.forward_index == call.index
    return trace.events


def assert_step_same_as_pytorch(build, step, unlike=None) -> list:
    """`hooktui.record(model, step=...)` of `build()` fires exactly what PyTorch's full module
    hooks fire on an identical twin running the same `step(model)` (which may run backwards
    of its own before returning the loss): same sequence, call numbers, slots, `None`s and
    values, in every backward. Returns the hooktui events.

    `unlike(position, record)`: the slots where hooktui is known to show `None` where
    PyTorch has a tensor (`position`: the firing's place among the module firings); each
    must be such a slot, and each must be found."""
    import hooktui
    from hooktui.engine.summaries.stats import StatsOptions

    expected, _ = plain_firings(build(), step=step)
    model = build()
    trace = hooktui.record(model, None, step=lambda: step(model), options=StatsOptions(max_values=1 << 20))
    assert not trace.failed, trace.error and trace.error.traceback
    events = [e for e in trace.events if e.hook in MODULE_HOOKS]
    got = engine_firings(type("T", (), {"events": events}))
    want = [f.key() for f in expected]
    found = []
    if unlike is not None:
        for position, (event, firing) in enumerate(zip(events, expected)):
            records = [t for t in event.tensors if not t.extra]
            for k, (record, tensor) in enumerate(zip(records, firing.tensors)):
                if unlike(position, record):
                    assert record.shape is None and tensor is not None, (position, record.name)
                    found.append((position, k))
        assert found, "no slot where hooktui is known to differ"
        for position, k in found:  # compared as PyTorch has it, the value left out below
            hook, module, call, shapes = got[position]
            got[position] = (hook, module, call, shapes[:k] + (tuple(expected[position].tensors[k].shape),) + shapes[k + 1:])
    assert got == want, "\n".join(f"{g}  |  {w}" for g, w in zip(got + [None] * len(want), want + [None] * len(got)) if g != w)
    for position, (event, firing) in enumerate(zip(events, expected)):
        records = [t for t in event.tensors if not t.extra and not t.name.startswith("kwargs[")]
        for k, (record, tensor) in enumerate(zip(records, firing.tensors)):
            if (position, k) not in found:
                assert_record_matches(record, tensor)
    return events
