"""What the firing kinds beside the tracer need of it: one small Protocol each.

The tracer (tracer.py) owns the run's numbers, its lock and its listener; the files beside
it make the finer firings (legacy.py, node_steps.py, param_grads.py, final_grads.py,
hunt.py, user_hooks.py) and notice backwards (backward_calls.py). Each takes the tracer as
one of these, so what it may use of the tracer is written down here, and a test can hand
it anything that has those few parts. The tracer is the one class that has them all.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol

import torch
from torch import nn

from ..autograd.node_hooks import NodeHooks
from ..records.records import SourceLocation, TensorRecord
from .contain import Containment
from .model_walk import ModelWalk
from .pipeline_grads import Pipeline


class Describes(Protocol):
    """A tensor as a record, and hooktui's failures kept off the model (contain.py)."""

    contain: Containment

    def describe(self, name: str, tensor: torch.Tensor, **extra: Any) -> TensorRecord: ...

    def missing(self, name: str, reason: str, **extra: Any) -> TensorRecord: ...


class FiresEvents(Describes, Protocol):
    """Emits a firing through the tracer's one path (its lock, its numbers, pending notes)."""

    def fire_event(self, *, live: dict, scope: dict | None = None, call_state: Any = None, module: nn.Module | None,
                   **fields: Any) -> int: ...


class FiresCalls(Describes, Protocol):
    """A firing of one module call, on the nodes of that call: legacy.py, node_steps.py."""

    param_names: dict[int, str]

    @property
    def node_hooks(self) -> NodeHooks: ...

    def fire_call(self, call: Any, hook: str, tensors: list[TensorRecord], live: dict, node: Any,
                  notes: list[str] | None = None, scope: dict | None = None) -> int: ...


class LegacyHost(FiresCalls, Protocol):
    """legacy.py: a legacy firing that is not recorded still takes its number."""

    def next_index(self, hook: str = "error") -> int: ...


class ModuleCalls(Protocol):
    """Which call of a module a gradient belongs to (param_grads.py, final_grads.py, user_hooks.py)."""

    def call_count(self, module_name: str) -> int: ...


class FinalGradHost(FiresEvents, ModuleCalls, Protocol):
    """final_grads.py."""

    @property
    def walk(self) -> ModelWalk: ...

    def last_forward_index(self, module_name: str) -> int | None: ...

    def module_named(self, module_name: str) -> nn.Module: ...


class ParamGradHost(FinalGradHost, Protocol):
    """param_grads.py."""

    defer_hunt: bool
    pipeline: Pipeline | None  # the step runs a pipeline schedule (pipeline_grads.py)

    def reached_calls(self, module_name: str) -> list[tuple[int, int | None]] | None: ...


class HuntHost(Describes, Protocol):
    """hunt.py: the node that made a non-finite gradient, now or at the step's end."""

    param_names: dict[int, str]
    defer_hunt: bool

    @property
    def node_hooks(self) -> NodeHooks: ...

    @property
    def calls(self) -> list: ...

    @property
    def next_free_index(self) -> int: ...

    def fire_born_node(self, node: Any, grad_inputs: Any, grad_outputs: Any, line: SourceLocation | None) -> None: ...


class UserHookHost(FiresEvents, ModuleCalls, Protocol):
    """user_hooks.py: the model's own hooks, fired as every other firing is."""


class NoticesBackward(Protocol):
    """backward_calls.py: told when each backward starts and ends."""

    def backward_pass(self, roots: list[torch.Tensor], kind: str, create_graph: bool = False,
                      keep_graph: bool | None = None, *, inputs: list[torch.Tensor] = (),
                      seeds: list[tuple[torch.Tensor, torch.Tensor | None]] = ()) -> AbstractContextManager[None]: ...


__all__ = [
    "Describes", "FiresEvents", "FiresCalls", "LegacyHost", "ModuleCalls", "FinalGradHost", "ParamGradHost", "HuntHost",
    "UserHookHost", "NoticesBackward",
]
