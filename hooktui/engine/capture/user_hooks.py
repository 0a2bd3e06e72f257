"""`user_hook` firings: the hooks the model, its user and its libraries registered themselves.

Discovery reads the dicts PyTorch calls hooks from: per module (`_forward_pre_hooks`,
`_forward_hooks`, `_backward_pre_hooks`, `_backward_hooks`), the process-wide ones in
`torch.nn.modules.module` (`_global_*`), and each parameter's `_backward_hooks` and
`_post_accumulate_grad_hooks`. Tensor hooks registered while the model runs are caught by
patching `Tensor.register_hook` / `register_post_accumulate_grad_hook` for the run.

Wrapping is in place: the wrapper takes the original's key in the same OrderedDict, so
order, handle ids, `with_kwargs` / `always_call` flags (keyed by the same id) and
`RemovableHandle.remove()` all keep working; the wrapper passes the same arguments
through and returns the hook's own return value, and a raised exception propagates
untouched. `remove()` puts each original function back under its key (if the model has
not removed it meanwhile), so afterwards every dict holds the user's functions again.

Multi-grad hooks (`torch.autograd.graph.register_multi_grad_hook`) are one firing per call
of the user's function, not one per tensor hook PyTorch builds them from (multi_grad.py).

Not seen: hooks registered on autograd nodes (`grad_fn.register_hook`) - C++ methods that
cannot be patched - and C++ hooks such as DDP's reducer hooks on AccumulateGrad nodes,
which live outside every Python dict. Module hooks registered during the run are not
wrapped either (the model rarely does that; they run as usual, unseen).
"""

from __future__ import annotations

import functools
import inspect
import linecache
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn.modules import module as module_globals

from ..records.records import SourceLocation, TensorRecord
from ..records.user_hook_records import UserHookCall, UserHookInfo
from ..summaries import sharded
from .contain import failure_text
from . import multi_grad
from .library_hooks import library_label
from .host import Describes, UserHookHost
from .model_walk import ModelWalk
from .naming import named_tensors
from .quit import QuitRequested

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_ENGINE_DIR = os.path.dirname(os.path.dirname(__file__)) + os.sep  # hooktui/engine, every room of it

# (dict attribute on a module, kind) in the order PyTorch calls them.
_MODULE_DICTS = (
    ("_forward_pre_hooks", "forward_pre"),
    ("_forward_hooks", "forward"),
    ("_backward_pre_hooks", "backward_pre"),
    ("_backward_hooks", None),  # full or legacy: module._is_full_backward_hook says which
)
_GLOBAL_DICTS = (
    ("_global_forward_pre_hooks", "global_forward_pre"),
    ("_global_forward_hooks", "global_forward"),
    ("_global_backward_pre_hooks", "global_backward_pre"),
    ("_global_backward_hooks", None),
)



# The tensor-hook registrations patched on torch.Tensor while runs go on, one list of
# (attribute, wrapper) per run in the order they started, and the functions they replace.
_PATCHED_ATTRS = (("register_hook", "tensor"), ("register_post_accumulate_grad_hook", "post_accumulate_grad"))
_PATCHING: list[list[tuple[str, Callable]]] = []
_UNPATCHED: dict[str, Callable] = {}
_PATCHES_LOCK = threading.Lock()


@dataclass
class _Slot:
    """One hook function in one dict."""

    info: UserHookInfo
    hooks: dict
    key: Any
    original: Callable
    wrapper: Callable | None = None


def discover(model: nn.Module, walk: ModelWalk | None = None) -> list[_Slot]:
    """Every hook registered on `model`, its parameters, and globally, right now."""
    walk = walk or ModelWalk(model)
    slots: list[_Slot] = []

    def add(hooks, kind: str, owner: str, module: str | None, flags_of: Callable[[Any], list[str]] = lambda _k: []) -> None:
        for key, fn in list((hooks or {}).items()):
            slots.append(_Slot(_info(len(slots), kind, owner, module, fn, flags_of(key)), hooks, key, fn))

    for attr, kind in _GLOBAL_DICTS:
        hooks = getattr(module_globals, attr)
        if kind is None:
            kind = "global_legacy_backward" if module_globals._global_is_full_backward_hook is False else "global_full_backward"
        add(hooks, kind, "global", None, _forward_flags(module_globals._global_forward_hooks_with_kwargs, module_globals._global_forward_hooks_always_called))
    for name, module in walk.modules:
        for attr, kind in _MODULE_DICTS:
            hooks = getattr(module, attr, None)
            if not hooks:
                continue  # most modules hold none: nothing to work out per dict
            if kind is None:
                kind = "legacy_backward" if getattr(module, "_is_full_backward_hook", None) is False else "full_backward"
            if kind == "forward_pre":
                flags = _forward_flags(module._forward_pre_hooks_with_kwargs, {})
            else:
                flags = _forward_flags(getattr(module, "_forward_hooks_with_kwargs", {}), getattr(module, "_forward_hooks_always_called", {}))
            add(hooks, kind, name or "(root)", name, flags if kind.startswith("forward") else lambda _k: [])
    cells: set[int] = set()
    for name, param in walk.params:
        if not param._backward_hooks and not getattr(param, "_post_accumulate_grad_hooks", None):
            continue
        module = name.rpartition(".")[0]
        for key, fn in list((param._backward_hooks or {}).items()):
            found = multi_grad.plumbing(fn)
            if found is None:
                slots.append(_Slot(_info(len(slots), "tensor", name, module, fn, []), param._backward_hooks, key, fn))
            elif id(found[0]) not in cells:  # torch's tensor hook of a multi-grad hook: the user's function, once
                cells.add(id(found[0]))
                slots.append(_multi_slot(len(slots), found, name, module))
        add(getattr(param, "_post_accumulate_grad_hooks", None), "post_accumulate_grad", name, module)
    return slots


def _multi_slot(index: int, found: tuple, owner: str, module: str | None) -> _Slot:
    """The slot of the user's function of a multi-grad hook, in the cell torch's tensor hooks share."""
    cell, mode, tensors = found
    hooks = multi_grad.CellHooks(cell)
    fn = hooks.get(None)
    if tensors is not None:
        owner = f"{tensors} tensors, {owner} among them"
    return _Slot(_info(index, "multi_grad", owner, module, fn, [f"mode={mode}"]), hooks, None, fn)


def _forward_flags(with_kwargs: dict, always_called: dict) -> Callable[[Any], list[str]]:
    return lambda key: [flag for flag, d in (("with_kwargs", with_kwargs), ("always_call", always_called)) if key in d]


class UserHooks:
    """Wraps the hooks found on `model` for one run; `infos` lists them (and those
    registered during the run, appended as they come)."""

    def __init__(self, model: nn.Module, walk: ModelWalk | None = None) -> None:
        self.model = model
        walk = walk or ModelWalk(model)
        self._slots = discover(model, walk)
        self.infos: list[UserHookInfo] = [s.info for s in self._slots]
        self._names = walk.derived("names", lambda w: {id(m): name for name, m in w.modules})
        self._modules = dict(walk.modules)
        self._param_names = walk.param_names
        # UserHookInfo.id -> what FSDP's or TP's hook does (None: the user's own), found at its first call.
        self._library: dict[int, str | None] = {}
        self._tracer: UserHookHost | None = None
        self._patched: list[tuple[str, Callable]] = []
        # id of each multi-grad hook's closure cell whose function is wrapped (multi_grad.py).
        self._cells = {id(s.hooks.cell) for s in self._slots if isinstance(s.hooks, multi_grad.CellHooks)}

    # -- install / remove ---------------------------------------------------------
    def install(self, tracer: UserHookHost) -> None:
        """Before the tracer's own hooks, so those are never taken for the user's."""
        self._tracer = tracer
        for slot in self._slots:
            if slot.hooks.get(slot.key) is slot.original:
                slot.wrapper = self._wrap(slot.info, slot.original)
                slot.hooks[slot.key] = slot.wrapper
        with _PATCHES_LOCK:
            if not _PATCHING:  # the functions as torch (or the user) had them before any run
                _UNPATCHED.update({attr: getattr(torch.Tensor, attr) for attr, _ in _PATCHED_ATTRS})
            wrappers = [(attr, self._patched_register(_UNPATCHED[attr], kind)) for attr, kind in _PATCHED_ATTRS]
            _PATCHING.append(wrappers)
            self._patched = wrappers
            for attr, wrapper in wrappers:
                setattr(torch.Tensor, attr, wrapper)

    def remove(self) -> None:
        # Runs may end in another order than they started (an app's model thread still
        # unwinding while the next run starts): each takes its own patch out of the list
        # and torch gets the newest patch left, or its own functions once none is, never
        # what one run found when it started (that restored a finished run's patch for good).
        with _PATCHES_LOCK:
            if any(entry is self._patched for entry in _PATCHING):
                _PATCHING[:] = [entry for entry in _PATCHING if entry is not self._patched]
                for attr, function in (_PATCHING[-1] if _PATCHING else _UNPATCHED.items()):
                    setattr(torch.Tensor, attr, function)
        self._patched = []
        for slot in self._slots:
            if slot.wrapper is not None and slot.hooks.get(slot.key) is slot.wrapper:
                slot.hooks[slot.key] = slot.original
            slot.wrapper = None

    def _patched_register(self, original: Callable, kind: str) -> Callable:
        @functools.wraps(original)
        def register(tensor: torch.Tensor, hook: Callable):
            site = _user_frame()
            if site is None or site.f_code.co_filename.startswith(_ENGINE_DIR):
                return original(tensor, hook)  # hooktui's own, or PyTorch's with no user caller
            found = multi_grad.plumbing(hook)
            if found is not None:
                # register_multi_grad_hook's own tensor hook: left as it is, the user's function in it wrapped.
                self._contained_multi(tensor, found, site)
                return original(tensor, hook)
            try:
                info = self._registered_info(tensor, hook, kind, site)
            except Exception as exc:  # hooktui's failure: the hook is registered as without hooktui, unseen
                self._tracer.contain.failed(f"noting the hook {getattr(hook, '__qualname__', hook)!s} registered", exc)
                return original(tensor, hook)
            wrapper = self._wrap(info, hook)
            handle = original(tensor, wrapper)
            hooks = tensor._backward_hooks if kind == "tensor" else tensor._post_accumulate_grad_hooks
            self._slots.append(_Slot(info, hooks, handle.id, hook, wrapper))
            self.infos.append(info)
            return handle

        return register

    def _contained_multi(self, tensor: torch.Tensor, found: tuple, site) -> None:
        try:
            self._wrap_multi(tensor, found, site)
        except Exception as exc:  # hooktui's failure: the hook runs as without hooktui, unseen
            self._tracer.contain.failed("noting a multi-grad hook registered", exc)

    def _wrap_multi(self, tensor: torch.Tensor, found: tuple, site) -> None:
        cell, mode, tensors = found
        if id(cell) in self._cells:
            return  # another tensor of the same registration
        self._cells.add(id(cell))
        hooks = multi_grad.CellHooks(cell)
        fn = hooks.get(None)
        module = self._running_module(site)
        owner = f"{tensors if tensors is not None else 'several'} tensors" + (f" in {module or '(root)'}.forward" if module is not None else "")
        info = _info(len(self.infos), "multi_grad", owner, module, fn, [f"mode={mode}"])
        info.registered_at = f"{_short(site.f_code.co_filename)}:{site.f_lineno}"
        wrapper = self._wrap(info, fn)
        hooks[None] = wrapper
        self._slots.append(_Slot(info, hooks, None, fn, wrapper))
        self.infos.append(info)

    def _registered_info(self, tensor: torch.Tensor, hook: Callable, kind: str, site) -> UserHookInfo:
        param = self._param_names.get(id(tensor))
        if param is not None:
            owner, module = param, param.rpartition(".")[0]
        else:
            module = self._running_module(site)
            made_by = f" made by {tensor.grad_fn.name()}" if tensor.grad_fn is not None else ""
            owner = f"tensor {tuple(tensor.shape)}{made_by}" + (f" in {module or '(root)'}.forward" if module is not None else "")
        info = _info(len(self.infos), kind, owner, module, hook, [])
        info.registered_at = f"{_short(site.f_code.co_filename)}:{site.f_lineno}"
        return info

    def _running_module(self, frame) -> str | None:
        """The innermost module of the model whose forward is on the stack."""
        while frame is not None:
            name = self._names.get(id(frame.f_locals.get("self")))
            if name is not None:
                return name
            frame = frame.f_back
        return None

    # -- firing -------------------------------------------------------------------
    def _wrap(self, info: UserHookInfo, hook: Callable) -> Callable:
        def wrapper(*args, **kwargs):
            return self._call(info, hook, args, kwargs)

        # inspect.unwrap / signature see the user's function, and PyTorch's own messages
        # ("hook 'my_hook' has changed the size of value") name it, not `wrapper`.
        functools.update_wrapper(wrapper, hook)
        return wrapper

    def _call(self, info: UserHookInfo, hook: Callable, args: tuple, kwargs: dict):
        # The user's hook runs once, with what it was given; what it returns or raises is
        # what PyTorch gets. hooktui's work around it is contained (contain.py).
        contain = self._tracer.contain
        module = args[0] if args and isinstance(args[0], nn.Module) else None
        library = self._library.get(info.id, False)
        if library is False:
            library = self._library[info.id] = contain.call("recognising FSDP's and TP's hooks", library_label, hook, info.kind)
        seen = contain.call(f"reading what your hook {info.function} received", self._received, info, args, module)
        received, replaced, records, versions = seen if seen is not None else ([], None, [], {})
        try:
            result = hook(*args, **kwargs)
        except QuitRequested:
            raise
        except Exception as exc:
            try:
                self._fire(info, module, records, [], UserHookCall(info, "raised", error=f"{type(exc).__name__}: {exc}"), dict(received))
            except Exception as failure:  # the user's exception is the one that goes on, whatever happened here
                if not contain.passes(failure):
                    contain.failed(f"recording your hook {info.function}", failure)
            raise
        contain.call(f"recording what your hook {info.function} did", self._done, info, module, received, replaced, records,
                     versions, result, library)
        return result

    def _received(self, info: UserHookInfo, args: tuple, module) -> tuple:
        received, replaced = _arguments(info, args, module)
        records = [self._tracer.describe(name, t) for name, t in received]
        if info.kind == "multi_grad" and isinstance(args[0], (list, tuple)):
            # mode "all": None where no gradient reached that tensor, as PyTorch passes it.
            records = _with_nones(self._tracer, records, args[0])
        return received, replaced, records, {name: _version(t) for name, t in received}

    def _done(self, info: UserHookInfo, module, received: list, replaced: str | None, records: list, versions: dict, result,
              library: str | None = None) -> None:
        tracer = self._tracer
        changes: list[str] = []
        returned: list[TensorRecord] = []
        live = dict(received)
        for name, t in received:
            if versions[name] is not None and t._version != versions[name]:
                before = next(r for r in records if r.name == name)
                after = tracer.describe(f"{name} after the hook", t, target=name, note="modified in place by the hook")
                returned.append(after)
                live[after.name] = t
                changes.append(f"{name} modified in place: norm {_norm(before)} → {_norm(after)}")
        outcome = "None"
        if library is not None:  # FSDP's or TP's: said as what it does, not compared (library_hooks.py)
            if result is not None:
                outcome = "same" if any(result is t for _, t in received) else "replaced"
            changes = [library]
        elif result is not None and replaced is not None:
            new = _returned(info, result)
            try:
                outcome, more_records, more_changes = _compare(tracer, replaced, received, records, new, "with_kwargs" in info.flags)
            except Exception as exc:
                outcome, more_records = "replaced", []
                more_changes = [f"hooktui could not compare what the hook returned with what it got: {failure_text(exc)}"]
            live.update((f"returned {name}", t) for name, t in new.items())
            returned += more_records
            changes += more_changes
        elif result is not None and info.kind == "multi_grad":
            changes.append("returned a value, which PyTorch ignores (a multi-grad hook's return value is not used)")
        elif result is not None:
            outcome = "same" if any(result is t for _, t in received) else "replaced"
        self._fire(info, module, records, returned, UserHookCall(info, outcome, changes), live, library)

    def _fire(self, info: UserHookInfo, module: nn.Module | None, received: list, returned: list, call: UserHookCall, live: dict,
              library: str | None = None) -> None:
        tracer = self._tracer
        name = self._names.get(id(module)) if module is not None else info.module
        name = name or ""
        before_call = info.kind in ("forward_pre", "global_forward_pre")
        count = tracer.call_count(name)
        # The first note names the hook, for `hooktui trace` and the Tensors pane.
        effect = "; ".join(call.changes) or {"None": "returned None", "same": "returned what it got"}.get(call.returned, call.returned)
        notes = [f"your hook {info.function} ({info.kind} on {info.owner}) at {_short(info.where)}: {effect}"]
        if library is not None:
            what = {"None": "returned None", "same": "returned what it got"}.get(
                call.returned, "returned a replacement, not compared value by value")
            notes = [f"{library}: {info.function} ({info.kind} on {info.owner}), not your hook; {what}"]
        if info.registered_at is not None:
            notes.append(f"registered during the run at {info.registered_at}")
        if call.error is not None:
            notes[0] = f"your hook {info.function} ({info.kind} on {info.owner}) at {_short(info.where)} raised {call.error}"
            notes.append("the exception propagates to the model's caller as without hooktui")
        # In backward: the autograd node running the hook (the legacy hook's ViewBackward0,
        # the full hooks' BackwardHookFunctionBackward), None in forward.
        node = torch._C._current_autograd_node()
        tensors = received + returned
        module_type = type(module if module is not None else self._modules.get(name)).__name__ if name in self._modules else ""
        # The tracer's one path (its lock, the number firing.py gives, the notes pending), as every firing.
        tracer.fire_event(
            hook="user_hook",
            module=module,
            facts=(name, module_type),
            call=count if before_call else max(count - 1, 0),
            tensors=tensors,
            node=node,
            source=_source_of(info),
            notes=notes,
            user_hook=call,
            live={r.name: live.get(r.name) for r in tensors},
        )


# -- what a hook gets, and what its return value replaces ------------------------------
def _version(t: torch.Tensor) -> int | None:
    """The version counter, None for an inference tensor (it has none)."""
    return None if t.is_inference() else t._version


def _with_nones(tracer: Describes, records: list[TensorRecord], grads) -> list[TensorRecord]:
    """A multi-grad hook's records in the order of its list, a missing record where PyTorch passed None."""
    by_name = {r.name: r for r in records}
    out = []
    for i, grad in enumerate(grads):
        name = f"grads[{i}]"
        out.append(by_name[name] if grad is not None else
                   tracer.missing(name, "PyTorch passed None: no gradient reached this tensor in this backward"))
    return out


def _arguments(info: UserHookInfo, args: tuple, module) -> tuple[list[tuple[str, torch.Tensor]], str | None]:
    """Named tensors the hook received, and the prefix of those its return value replaces."""
    kind = info.kind.removeprefix("global_")
    if kind == "forward_pre":
        received = list(named_tensors(args[1], "args"))
        if len(args) > 2:
            received += list(named_tensors(args[2], "kwargs"))
        return received, "args"
    if kind == "forward":
        received = list(named_tensors(args[1], "args"))
        if len(args) > 3:
            received += list(named_tensors(args[2], "kwargs"))
        return received + list(named_tensors(args[-1], "output")), "output"
    if kind == "backward_pre":
        return list(named_tensors(args[1], "grad_output")), "grad_output"
    if kind in ("full_backward", "legacy_backward"):
        return list(named_tensors(args[1], "grad_input")) + list(named_tensors(args[2], "grad_output")), "grad_input"
    if kind == "tensor":
        return list(named_tensors(args[0], "grad")), "grad"
    if kind == "multi_grad":  # mode "all": the list of gradients; "any": the first one's gradient
        return list(named_tensors(args[0], "grads" if isinstance(args[0], (list, tuple)) else "grad")), None
    # post_accumulate_grad: the parameter, whose .grad has just been written.
    param = args[0]
    return ([("grad", param.grad)] if param.grad is not None else []), None


def _returned(info: UserHookInfo, result) -> dict[str, torch.Tensor]:
    kind = info.kind.removeprefix("global_")
    if kind == "forward_pre":
        if "with_kwargs" in info.flags and isinstance(result, tuple) and len(result) == 2:
            return dict(named_tensors(result[0], "args")) | dict(named_tensors(result[1], "kwargs"))
        return dict(named_tensors(result if isinstance(result, tuple) else (result,), "args"))
    prefix = {"forward": "output", "backward_pre": "grad_output", "tensor": "grad"}.get(kind, "grad_input")
    if kind in ("full_backward", "legacy_backward") and isinstance(result, torch.Tensor):
        result = (result,)  # PyTorch accepts a bare tensor for a one-input module
    return dict(named_tensors(result, prefix))


def _compare(tracer: Describes, prefix: str, received, records: list[TensorRecord], returned: dict[str, torch.Tensor], with_kwargs: bool = False):
    # A forward pre-hook with kwargs returns (args, kwargs): both are replaced.
    prefixes = ("args", "kwargs") if prefix == "args" and with_kwargs else (prefix,)
    before = {name: t for name, t in received if name.startswith(prefixes)}
    before_records = {r.name: r for r in records}
    out, changes = [], []
    replaced = False
    for name, after in returned.items():
        old = before.get(name)
        if old is after:
            continue
        replaced = True
        record = tracer.describe(f"returned {name}", after, target=name)
        out.append(record)
        if old is None:
            changes.append(f"{name}: the hook returned a tensor where it got none")
            continue
        old_record = before_records[name]
        distributed = sharded.is_dtensor(old) or sharded.is_dtensor(after)
        if not distributed and tuple(old.shape) != tuple(after.shape):
            changes.append(f"{name} replaced: shape {tuple(old.shape)} → {tuple(after.shape)}")
            continue
        old_part, new_part, apart = _local_parts(old, after)
        if apart is not None:
            changes.append(f"{name} replaced: {apart}")
            continue
        with torch.no_grad():
            diff = (new_part.double() - old_part.double()).abs().max().item() if old_part.numel() else 0.0
        of = f" (this rank's local parts: {_kind_text(old)} → {_kind_text(after)})" if distributed else ""
        if diff == 0:
            changes.append(f"{name}: returned a new tensor with the same values{of}")
        else:
            changes.append(f"{name} replaced: max |Δ| {diff:.4g}{of}, norm {_norm(old_record)} → {_norm(record)}")
    for name in before.keys() - returned.keys():
        replaced = True
        changes.append(f"{name}: the hook returned None in its place")
    return ("replaced" if replaced else "same"), out, changes


def _local_parts(old: torch.Tensor, new: torch.Tensor) -> tuple:
    """(old, new, None): what to compare value by value, detached; DTensors by this rank's
    local parts, never as a whole (a collective: sharded.py). (_, _, why) when their values
    are not comparable: other placements, or partial sums on one side only."""
    old_part, new_part = sharded.local(old).detach(), sharded.local(new).detach()
    old_as, new_as = _kind_text(old), _kind_text(new)
    if old_as != new_as and old_as.startswith("a DTensor") and new_as.startswith("a DTensor"):
        return old_part, new_part, (f"{old_as} → {new_as}, redistributed (not compared value by value: "
                                    "the other ranks' parts are not here)")
    if old_as != new_as and "Partial" in old_as + new_as:
        return old_part, new_part, (f"{old_as} → {new_as} (not compared value by value: partial sums on one side "
                                    "only, and the other ranks' parts are not here)")
    if old_part.shape != new_part.shape:
        return old_part, new_part, (f"{old_as} → {new_as}, local shapes {tuple(old_part.shape)} → "
                                    f"{tuple(new_part.shape)} (not compared value by value)")
    return old_part, new_part, None


def _kind_text(t: torch.Tensor) -> str:
    if not sharded.is_dtensor(t):
        return "a tensor"
    return f"a DTensor {sharded.placements_text(t)} of {list(t.shape)}"


def _norm(record: TensorRecord) -> str:
    return "?" if record.stats is None or record.stats.norm is None else f"{record.stats.norm:.4g}"


# -- naming ------------------------------------------------------------------------------
def _info(index: int, kind: str, owner: str, module: str | None, fn: Callable, flags: list[str]) -> UserHookInfo:
    filename, lineno = _definition(fn)
    return UserHookInfo(
        id=index, kind=kind, owner=owner, function=_qualname(fn), filename=filename, lineno=lineno, module=module, flags=list(flags)
    )


def _target(fn: Callable) -> Callable:
    while isinstance(fn, functools.partial):
        fn = fn.func
    fn = inspect.unwrap(fn) if hasattr(fn, "__wrapped__") else fn
    if not (inspect.isfunction(fn) or inspect.ismethod(fn)) and callable(fn):
        return getattr(type(fn), "__call__", fn)
    return fn


def _qualname(fn: Callable) -> str:
    target = _target(fn)
    return getattr(target, "__qualname__", None) or type(fn).__qualname__


def _definition(fn: Callable) -> tuple[str | None, int | None]:
    code = getattr(inspect.unwrap(_target(fn)) if callable(_target(fn)) else None, "__code__", None)
    if code is None:
        return None, None
    return code.co_filename, code.co_firstlineno


def _source_of(info: UserHookInfo) -> SourceLocation | None:
    if info.filename is None or info.lineno is None:
        return None
    return SourceLocation(info.filename, info.lineno, info.function, linecache.getline(info.filename, info.lineno).strip())


def _user_frame():
    """The nearest frame outside torch and this file: who called register_hook."""
    frame = sys._getframe(1)
    while frame is not None and (frame.f_code.co_filename.startswith(_TORCH_DIR) or frame.f_code.co_filename == __file__):
        frame = frame.f_back
    return frame


def _short(filename: str) -> str:
    try:
        relative = os.path.relpath(filename)
    except ValueError:
        return filename
    return filename if relative.startswith("..") else relative
