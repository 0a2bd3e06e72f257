"""Watch expressions (`W` in the app): Python expressions evaluated again at every firing
shown, in the console's namespace (console.py: `module`, `args`, `output`, `grad_output`,
`grad_input`, `node`, `tensors`, `torch`, `event`, and the run's `model`, `loss`, ...).

A watch only looks: it is evaluated under `torch.no_grad()` (no graph is recorded on the
model's tensors), the random number generators are put back as they were (a `torch.rand`
in a watch leaves the model's dropout masks alone), a hook it registers on a module of the
model, a global module hook or a hook on a tensor it can name is taken out again (and said),
and a tensor the expression changes in place is caught by its version counter and said,
since that cannot be undone. Other side effects (a hook on an autograd node, an attribute
set, `.backward()`) are the user's, as in pdb.

Each watch gives one line: the value (a one-element tensor as its number, a larger one as
the Tensors pane's summary, anything else as a short repr), the exception's one line, or,
when a name it uses does not exist at this firing (`grad_output` at a forward firing, any
live name at a past firing or in a recorded trace), which name and why: not an error.

Only expressions: a statement (`x = 1`) is refused, since it would run at every firing.
"""

from __future__ import annotations

import ast
import contextlib
import itertools
import sys
import weakref
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..records.records import Event, TensorRecord
from .breakpoints import CONDITION_NAMES, condition_scope
from .console import _REPR, _result, is_torch_tensor

OK, ERROR, ABSENT = "ok", "error", "absent"
# A watch is evaluated at every step: on a very large model only the first modules and
# parameters are looked at for hooks and in-place changes (the firing's own are always).
MODULES_LOOKED_AT = 2_000
PARAMETERS_LOOKED_AT = 10_000


@dataclass(frozen=True)
class WatchValue:
    expression: str
    text: str  # one line
    kind: str = OK  # OK, ERROR (it raised, or changed a tensor) or ABSENT (a name it needs is not here)


@lru_cache(maxsize=256)
def compiled(expression: str) -> tuple[Any, frozenset[str]]:
    """The code of `expression` and the names it reads; SyntaxError if it is not an expression."""
    code = compile(expression, "<watch>", "eval")
    names = frozenset(node.id for node in ast.walk(ast.parse(expression, mode="eval")) if isinstance(node, ast.Name))
    return code, names


def evaluate_watches(expressions: list[str], event: Event, live: Any = None, *, run_names: dict | None = None,
                     past: bool = False) -> list[WatchValue]:
    """Every watch at `event`. `live`: the paused firing's live objects (engine LiveFiring),
    None at a past firing of a live run (`past`) or in a recorded trace."""
    run_names = run_names or {}
    scope = {**run_names, **condition_scope(event, live)}
    torch = sys.modules.get("torch")  # loaded whenever there are live objects to watch
    tensors = _tensors(scope) if torch is not None and expressions else []
    return [_one(expression, scope, live, past, torch, tensors) for expression in expressions]


def _one(expression: str, scope: dict, live: Any, past: bool, torch: Any, tensors: list) -> WatchValue:
    try:
        code, names = compiled(expression)
    except SyntaxError as exc:
        return WatchValue(expression, f"SyntaxError: {exc.msg} (a watch is an expression)", ERROR)
    except ValueError as exc:  # a null character
        return WatchValue(expression, _one_line(f"ValueError: {exc}"), ERROR)
    absent = [n for n in CONDITION_NAMES if n in names and scope.get(n) is None]
    if absent:
        return WatchValue(expression, _absent_text(absent, scope.get("event"), live, past), ABSENT)
    namespace = {"__builtins__": __builtins__, **scope}
    versions = [tensor._version for _, tensor in tensors]
    handles = _handles(torch)
    first_new = handles.next_id if handles is not None else None  # every hook's handle takes the next id
    try:
        with _looking_only(torch):
            value = eval(code, namespace)
            result = WatchValue(expression, _text(expression, value))
    except (Exception, SystemExit) as exc:  # the user's expression (exit() too): one line, the app goes on
        result = WatchValue(expression, _one_line(f"{type(exc).__name__}: {exc}"), ERROR)
    added = _remove_hooks_from(first_new, scope, tensors) if handles is not None and handles.next_id != first_new else 0
    changed = list(dict.fromkeys(name for (name, tensor), version in zip(tensors, versions) if tensor._version != version))
    if changed:  # it cannot be undone: said instead of the value
        return WatchValue(expression, f"changed {', '.join(changed[:3])} in place: the run is no longer what it was (side effects are yours)", ERROR)
    if added:
        return WatchValue(expression, f"registered {added} hook{'s' if added > 1 else ''}: removed again (a watch only looks)", ERROR)
    return result


def _absent_text(absent: list[str], event: Event | None, live: Any, past: bool) -> str:
    names = ", ".join(absent)
    if live is not None:
        return f"no {names} at a {event.hook if event is not None else ''} firing"
    if past:
        return f"no {names} at a past firing: only the paused firing has live objects"
    return f"no {names}: a recorded trace has no live objects"


@contextlib.contextmanager
def _looking_only(torch: Any):
    """No graph, and the random generators as they were."""
    if torch is None:
        yield
        return
    cuda = torch.cuda.is_initialized()
    cpu_state = torch.random.get_rng_state()
    cuda_states = torch.cuda.get_rng_state_all() if cuda else None
    try:
        with torch.no_grad():
            yield
    finally:
        torch.random.set_rng_state(cpu_state)
        if cuda_states is not None:
            torch.cuda.set_rng_state_all(cuda_states)


def _tensors(scope: dict) -> list[tuple[str, Any]]:
    """The live tensors a watch can reach by name: what the hook received (args, kwargs,
    output, grad_output, grad_input), the firing's tensors, and the model's parameters and
    buffers (the first PARAMETERS_LOOKED_AT, listed once per model)."""
    found: dict[int, tuple[str, Any]] = {}

    def add(name: str, value: Any) -> None:
        if hasattr(value, "_version") and id(value) not in found:
            found[id(value)] = (name, value)

    for name in ("args", "output", "grad_output", "grad_input"):
        value = scope.get(name)
        if isinstance(value, (tuple, list)):
            for i, item in enumerate(value):
                add(f"{name}[{i}]", item)
        else:
            add(name, value)
    for key, value in (scope.get("kwargs") or {}).items():
        add(f"kwargs[{key!r}]", value)
    for name, tensor in (scope.get("tensors") or {}).items():
        add(name, tensor)
    # The model's, as listed once (a parameter may come twice: said once, see _one).
    return [*found.values(), *_model_reach(scope.get("model"))[1]]


_REACH: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _model_reach(model: Any) -> tuple[list, list]:
    """(modules, (name, parameter or buffer)) of `model`, the first MODULES_LOOKED_AT and
    PARAMETERS_LOOKED_AT, listed once per model: walking a large model at every step costs."""
    if model is None or not hasattr(model, "named_parameters"):
        return [], []
    try:
        return _REACH[model]
    except (KeyError, TypeError):
        pass
    modules = list(itertools.islice(model.modules(), MODULES_LOOKED_AT))
    tensors = list(itertools.islice(itertools.chain(model.named_parameters(), model.named_buffers()), PARAMETERS_LOOKED_AT))
    with contextlib.suppress(TypeError):
        _REACH[model] = (modules, [(name, t) for name, t in tensors if hasattr(t, "_version")])
    return modules, tensors


def _handles(torch: Any):
    """torch's RemovableHandle: every hook registered (module, global, tensor) takes its next id."""
    if torch is None:
        return None
    hooks = sys.modules.get("torch.utils.hooks")
    return getattr(hooks, "RemovableHandle", None)


# A module's hook dicts (torch/nn/modules/module.py), all keyed by the handle's id: a hook
# registered by a watch is found there, and taken out of each (the flags dicts too).
_MODULE_HOOKS = ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks", "_forward_hooks_with_kwargs",
                 "_forward_hooks_always_called", "_backward_pre_hooks", "_backward_hooks")
_GLOBAL_HOOKS = ("_global_forward_pre_hooks", "_global_forward_hooks", "_global_forward_hooks_always_called",
                 "_global_forward_hooks_with_kwargs", "_global_backward_pre_hooks", "_global_backward_hooks")


def _remove_hooks_from(first_new: int, scope: dict, tensors: list) -> int:
    """Take out every hook with a handle id from `first_new` on that a watch can reach: on
    the firing's module and the model's modules, the global module hooks, the hooks of the
    tensors it can name. (Hooks on an autograd node cannot be listed: those are the user's.)
    Only when a hook was registered at all while the watch ran. The number taken out."""
    modules = {id(m): m for m in (scope.get("module"),) if m is not None}
    modules.update((id(m), m) for m in _model_reach(scope.get("model"))[0])
    dicts = [getattr(m, name, None) for m in modules.values() for name in _MODULE_HOOKS]
    module_py = sys.modules.get("torch.nn.modules.module")
    dicts += [getattr(module_py, name, None) for name in _GLOBAL_HOOKS]
    dicts += [getattr(tensor, "_backward_hooks", None) for _, tensor in tensors]
    removed: set[int] = set()  # ids: the flags dicts (with_kwargs, always_called) hold their hook's id too
    for hook_dict in dicts:
        if not isinstance(hook_dict, dict):
            continue
        new = [key for key in hook_dict if isinstance(key, int) and key >= first_new]
        for key in new:
            del hook_dict[key]
        removed.update(new)
    return len(removed)


def _text(expression: str, value: Any) -> str:
    if is_torch_tensor(value):
        if value.numel() == 1 and value.layout == sys.modules["torch"].strided:
            item = value.item()
            number = f"{item:.6g}" if isinstance(item, float) else repr(item)
            device = f", {value.device}" if value.device.type != "cpu" else ""
            return f"{number}  ({str(value.dtype).removeprefix('torch.')}{device})"
        return _one_line(_result(expression, value).text)
    if isinstance(value, TensorRecord):
        return _one_line(_result(expression, value).text)
    if isinstance(value, float):
        return f"{value:.6g}"
    return _one_line(_REPR.repr(value))


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split("\n"))
    return text if len(text) <= limit else text[: limit - 1] + "…"
