"""The helpers beside the tracer take it as a small Protocol (engine/capture/host.py): the
tracer has every part each of them names, and each names only parts the tracer has."""

from __future__ import annotations

import inspect
import typing

import pytest
from torch import nn

from hooktui.engine.capture import host
from hooktui.engine.capture.tracer import Tracer

PROTOCOLS = [obj for _, obj in inspect.getmembers(host, inspect.isclass)
             if obj.__module__ == host.__name__ and getattr(obj, "_is_protocol", False)]


def _members(protocol) -> set[str]:
    names: set[str] = set()
    for cls in protocol.__mro__:
        if cls in (object, typing.Protocol, typing.Generic) or cls.__module__ != host.__name__:
            continue
        names |= set(getattr(cls, "__annotations__", {}))
        names |= {n for n in vars(cls) if not n.startswith("_")}
    return names


def test_every_helper_protocol_is_small_and_met_by_the_tracer():
    assert len(PROTOCOLS) >= 8
    tracer = Tracer(nn.Linear(2, 2), lambda event, live: None)
    for protocol in PROTOCOLS:
        members = _members(protocol)
        assert members, protocol
        assert len(members) <= 12, (protocol.__name__, sorted(members))  # small: only what one helper uses
        missing = [name for name in members if not hasattr(tracer, name)]
        assert not missing, (protocol.__name__, missing)


@pytest.mark.parametrize("name", ["ParamGradHooks", "LegacyHooks", "NodeSteps", "NodeWatch", "UserHooks"])
def test_the_helpers_say_which_protocol_they_take(name):
    from hooktui.engine.capture import hunt, legacy, node_steps, param_grads, user_hooks

    cls = next(getattr(m, name) for m in (param_grads, legacy, node_steps, hunt, user_hooks) if hasattr(m, name))
    method = cls.install if name == "UserHooks" else cls.__init__
    annotation = inspect.signature(method).parameters["tracer"].annotation
    assert annotation in {p.__name__ for p in PROTOCOLS}, (name, annotation)


def test_backward_listeners_are_told_each_backward_with_its_depth():
    # What the guard tells its steps by (loop/guard.py): the outermost backward at depth 0,
    # a backward nested in it (reentrant checkpointing) at depth 1, each end after its start.
    import torch
    from torch.utils.checkpoint import checkpoint

    torch.manual_seed(0)
    inner = nn.Linear(3, 3)
    model = nn.Sequential(nn.Linear(3, 3), inner)
    told = []
    tracer = Tracer(model, lambda event, live: told.append(("firing", tracer.backward_depth)),
                    on_backward_start=lambda depth: told.append(("start", depth)),
                    on_backward_end=lambda depth: told.append(("end", depth)))
    tracer.install()
    try:
        x = torch.randn(2, 3, requires_grad=True)
        checkpoint(inner, model[0](x), use_reentrant=True).sum().backward()
    finally:
        tracer.remove()
    edges = [t for t in told if t[0] != "firing"]
    assert edges == [("start", 0), ("start", 1), ("end", 1), ("end", 0)]
    assert tracer.backward_depth == 0
    assert any(kind == "firing" and depth >= 1 for kind, depth in told)  # backward firings see the depth
