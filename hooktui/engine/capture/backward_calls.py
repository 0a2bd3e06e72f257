"""Notice every backward pass the traced model runs, not only the one hooktui starts.

PyTorch's full backward hooks fire in any backward that reaches a module call: the nested
`torch.autograd.backward` that reentrant activation checkpointing runs inside the main
backward (after recomputing the forward), and `torch.autograd.grad` called inside a forward
(gradient penalties, physics-informed models). hooktui places its gradient watches when a
backward starts, so while a tracer is active `torch.autograd.backward` and
`torch.autograd.grad` are wrapped to tell it when one starts and ends. The wrappers pass
every argument through unchanged and are removed when the run ends.

Code that bound the function before the run (`from torch.autograd import grad` at import
time) calls the original; both reach the autograd engine through
`Variable._execution_engine.run_backward`, so the engine is also put behind a thin proxy
that notices a backward no wrapper noticed (it fires as any other; the proxy forwards every
other attribute to the engine). The wrappers stay: they see the arguments as the user gave
them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from typing import Any

import torch
import torch.autograd
from torch.autograd.variable import Variable

from .host import NoticesBackward

_lock = threading.Lock()
_active: list[NoticesBackward] = []  # tracers, innermost last
_originals: dict[str, Callable] = {}
_engine_holder: list[Any] = []  # the engine while the proxy stands in for it
# `pending`: a wrapper on this thread has noticed the backward its next engine call runs.
_noticed = threading.local()


@contextmanager
def noticed_by(tracer: NoticesBackward):
    """While active, every torch.autograd.backward / grad call runs inside
    `tracer.backward_pass(roots, kind)`."""
    with _lock:
        if not _active:
            _originals["backward"] = torch.autograd.backward
            _originals["grad"] = torch.autograd.grad
            torch.autograd.backward = _wrap("backward", _originals["backward"])
            torch.autograd.grad = _wrap("grad", _originals["grad"])
            engine = Variable._execution_engine
            _engine_holder.append(engine)
            Variable._execution_engine = _NoticingEngine(engine)
        _active.append(tracer)
    try:
        yield
    finally:
        with _lock:
            _active.remove(tracer)
            if not _active:
                torch.autograd.backward = _originals.pop("backward")
                torch.autograd.grad = _originals.pop("grad")
                Variable._execution_engine = _engine_holder.pop()


def _wrap(kind: str, original: Callable) -> Callable:
    def wrapper(*args, **kwargs):
        tracer = _active[-1] if _active else None
        if tracer is None or getattr(_noticed, "pending", False):
            # pending: this very call, dispatched again before it reached the engine. A
            # TorchFunctionMode (`torch.set_default_device`, `with torch.device(...)`) makes the
            # original call `handle_torch_function(grad, ...)`, and its global `grad` is this
            # wrapper: a second backward_pass for it would fire every hook twice.
            return original(*args, **kwargs)
        roots = kwargs.get("tensors" if kind == "backward" else "outputs", args[0] if args else None)
        # Their places: backward(tensors, grad_tensors, retain_graph, create_graph),
        # grad(outputs, inputs, grad_outputs, retain_graph, create_graph).
        position = 3 if kind == "backward" else 4
        create_graph = kwargs.get("create_graph", args[position] if len(args) > position else False)
        retain_graph = kwargs.get("retain_graph", args[position - 1] if len(args) > position - 1 else None)
        keep_graph = bool(create_graph) if retain_graph is None else bool(retain_graph)
        # backward(..., grad_variables, inputs) / grad(outputs, inputs, ...).
        inputs = kwargs.get("inputs", (args[5] if len(args) > 5 else None) if kind == "backward" else (args[1] if len(args) > 1 else None))
        seeds = kwargs.get("grad_tensors" if kind == "backward" else "grad_outputs", args[position - 2] if len(args) > position - 2 else None)
        with tracer.backward_pass(_tensors(roots), kind, bool(create_graph), keep_graph, inputs=_tensors(inputs),
                                  seeds=_seeds(roots, seeds)):
            _noticed.pending = True
            try:
                return original(*args, **kwargs)
            finally:
                _noticed.pending = False

    wrapper.__wrapped__ = original  # type: ignore[attr-defined]
    wrapper.__name__ = original.__name__
    wrapper.__doc__ = original.__doc__
    return wrapper


class _NoticingEngine:
    """Stands in for `Variable._execution_engine`: a backward that reaches the engine
    without passing a wrapper (a `grad` bound before the run) is noticed here."""

    def __init__(self, engine) -> None:
        self._engine = engine

    def run_backward(self, *args, **kwargs):
        tracer = _active[-1] if _active else None
        if getattr(_noticed, "pending", False):
            _noticed.pending = False  # a wrapper noticed this one (a nested one is not)
            return self._engine.run_backward(*args, **kwargs)
        if tracer is None:
            return self._engine.run_backward(*args, **kwargs)
        # run_backward(tensors, grad_tensors, keep_graph, create_graph, inputs,
        # allow_unreachable, accumulate_grad): keep_graph is resolved by then.
        roots = args[0] if args else kwargs.get("tensors", ())
        keep_graph = bool(args[2]) if len(args) > 2 else bool(kwargs.get("keep_graph", False))
        create_graph = bool(args[3]) if len(args) > 3 else bool(kwargs.get("create_graph", False))
        accumulate = args[6] if len(args) > 6 else kwargs.get("accumulate_grad", True)
        kind = "backward" if accumulate else "grad"
        inputs = args[4] if len(args) > 4 else kwargs.get("inputs", ())
        seeds = args[1] if len(args) > 1 else kwargs.get("grad_tensors")
        with tracer.backward_pass(_tensors(roots), kind, create_graph, keep_graph, inputs=_tensors(inputs),
                                  seeds=_seeds(roots, seeds)):
            return self._engine.run_backward(*args, **kwargs)

    def __getattr__(self, name: str):
        return getattr(self._engine, name)


def _seeds(roots: Any, grads: Any) -> list[tuple[torch.Tensor, torch.Tensor | None]]:
    """(root, the gradient it starts from as given: None for the implicit ones) pairs."""
    roots = [roots] if isinstance(roots, torch.Tensor) else list(roots) if isinstance(roots, Sequence) else []
    if grads is None or isinstance(grads, torch.Tensor):
        grads = [grads] * len(roots) if grads is None else [grads]
    elif not isinstance(grads, Sequence):
        return []
    return [(r, g if isinstance(g, torch.Tensor) else None) for r, g in zip(roots, grads) if isinstance(r, torch.Tensor)]


def _tensors(roots: Any) -> list[torch.Tensor]:
    if isinstance(roots, torch.Tensor):
        return [roots]
    if isinstance(roots, Sequence):
        return [t for t in roots if isinstance(t, torch.Tensor)]
    return []
