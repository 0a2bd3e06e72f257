"""`param_grad` firings: a parameter's gradient, the moment AccumulateGrad writes `.grad`.

A module's full backward hook does not carry its parameters' gradients, and can run before
its own weight's `.grad` is set; a post-accumulate-grad hook on each parameter shows where
they really arrive.

A module called several times gets one such firing per backward, the sum over every call
whose output that backward reaches: it is filed under the last of them (its forward_index
is that call's forward firing), and a note names them all.
"""

from __future__ import annotations

import sys
from collections import OrderedDict

import torch
from torch import nn
from torch.nn.parameter import UninitializedTensorMixin
from torch.autograd.graph import get_gradient_edge
from torch.utils.hooks import RemovableHandle

from ..records.notes import Note
from ..records.records import SourceLocation
from .grad_kinds import GradKinds
from .host import ParamGradHost
from .model_walk import ModelWalk
from .source import definition_location


class ParamGradHooks:
    def __init__(self, tracer: ParamGradHost) -> None:
        self.tracer = tracer
        self._handles: list = []
        # (parameter, key) of each hook put straight into its dict (see install).
        self._placed: list[tuple[torch.Tensor, int]] = []
        self._hooked: set[int] = set()
        # id(param) -> (param, its AccumulateGrad node): found once, in the backward's graph
        # (note_accumulator) or else by get_gradient_edge, which makes a view to reach it.
        self._nodes: dict[int, tuple] = {}
        # While hunting a non-finite value: records of the .grad a parameter already held,
        # non-finite, when a backward started (its own firing shows it beside the new one).
        self._bad_before: dict[int, object] = {}
        # Parameters that had no post-accumulate-grad hook dict before ours: set back to
        # None once ours is removed (the dict would stay, empty, on every parameter).
        self._had_none: list = []
        self._kinds: GradKinds | None = None
        # id(param) -> (owner, "<short>.grad", qualified name) of each hooked parameter.
        self._names: dict[int, tuple[str, str, str]] = {}

    def install(self, model: nn.Module, params: list | None = None) -> None:
        """Hook every parameter not hooked yet (`params`: the model's named parameters, if
        walked already). A lazy module's parameters take hooks only once its first forward
        has materialised them: call again when backward starts."""
        if self._kinds is None:
            kinds = self._kinds = GradKinds(self.tracer.walk.modules, self.tracer.pipeline)
            # Under DDP, its forwards decide whether the backward all-reduces: each is read
            # once it returns, DDP's own _post_forward done (grad_kinds.py).
            for ddp in kinds.ddp_wrappers:
                read = self.tracer.contain.hook(lambda module, _args, _output: kinds.ddp_forward(module),
                                                "its forward hook on DDP")
                if "torch._dynamo" in sys.modules:  # as tracer.py's: run eagerly, never traced
                    read = torch.compiler.disable(read)
                self._handles.append(ddp.register_forward_hook(read))
        walk = self.tracer.walk
        params = ModelWalk(model).params if params is None else params
        # id(param) -> (owner, "<short>.grad", qualified name): what its firings repeat,
        # worked out once per walk (kept from run to run: model_walk.py).
        names = walk.derived("param_grad_names", _names_of) if params is walk.params else _names_of(params)
        flat = [(f"{owner}._flat_param" if owner else "_flat_param", p) for owner, p in self._kinds.flat]
        if flat:
            names = {**names, **_names_of(flat)}
        self._names = names if not self._names else {**self._names, **names}
        fire = self._fire_hook
        hooked = self._hooked
        for qualified, param in (*params, *flat):
            # A non-leaf "parameter" takes no such hook (PyTorch refuses it): FSDP1 with
            # use_orig_params=True puts views of its FlatParameter in place of the parameters
            # while a forward or backward runs (a guard starts its next tracer there when it
            # stops mid-forward). Their gradients reach the FlatParameter, hooked below.
            if param.requires_grad and param.is_leaf and not isinstance(param, UninitializedTensorMixin) \
                    and id(param) not in hooked:
                hooked.add(id(param))
                if type(param) in _PLAIN:
                    # What register_post_accumulate_grad_hook does for a plain tensor, without
                    # a RemovableHandle per parameter per run (nor user_hooks.py's check of
                    # who registers it: hooktui does).
                    hooks = param._post_accumulate_grad_hooks
                    if hooks is None:
                        self._had_none.append(param)
                        hooks = param._post_accumulate_grad_hooks = OrderedDict()
                    key = RemovableHandle.next_id
                    RemovableHandle.next_id = key + 1
                    hooks[key] = fire
                    self._placed.append((param, key))
                else:  # a subclass may handle the registration itself (__torch_function__)
                    if param._post_accumulate_grad_hooks is None:
                        self._had_none.append(param)
                    self._handles.append(param.register_post_accumulate_grad_hook(fire))

    def _fire_hook(self, param: torch.Tensor) -> None:
        """Every parameter's post-accumulate-grad hook (one function for all: its names are
        looked up, not bound into a closure per parameter per run); contained (contain.py)."""
        try:
            self._fire(param, *self._names[id(param)])
        except Exception as exc:
            contain = self.tracer.contain
            if contain.passes(exc):
                raise
            known = self._names.get(id(param))
            contain.failed(f"its gradient hook on {known[2] if known else 'a parameter'}", exc)

    def note_accumulator(self, node) -> None:
        """An AccumulateGrad node of a backward's graph (the tracer walks them all as the
        backward starts): its parameter's firings take it from here, not from
        get_gradient_edge, which makes a view of the parameter to reach it."""
        variable = getattr(node, "variable", None)
        if isinstance(variable, torch.Tensor) and id(variable) in self._hooked:
            self._nodes[id(variable)] = (variable, node)

    @property
    def kinds(self) -> GradKinds | None:
        """Which gradients the model's wrappers make (None before `install`)."""
        return self._kinds

    def note_bad_grads(self, model: nn.Module) -> None:
        """Called as a backward starts, while hunting (hunt.py). Deferred (`defer_hunt`):
        every .grad is summarised (no value is read now); hooktui.guard drops from their
        firings, at the step's end, those that were finite."""
        from .hunt import has_nonfinite

        deferred = self.tracer.defer_hunt
        for qualified, param in ModelWalk(model).params:
            if param.grad is not None and (deferred or has_nonfinite(param.grad)):
                short = qualified.rpartition(".")[2]
                self._bad_before[id(param)] = self.tracer.describe(
                    f"{short}.grad before this backward", param.grad, target=qualified, extra=True,
                    note=Note("held_grad", "the .grad this parameter already held when the backward started (not zeroed "
                              "since?): this backward's gradient is added to it"),
                )

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        for param, key in self._placed:
            hooks = param._post_accumulate_grad_hooks
            if hooks is not None:
                hooks.pop(key, None)
        self._placed.clear()
        for param in self._had_none:
            if not param._post_accumulate_grad_hooks:
                param._post_accumulate_grad_hooks = None
        self._had_none.clear()
        self._hooked.clear()
        self._nodes.clear()
        self._bad_before.clear()
        self._kinds = None
        self._names = {}

    def _fire(self, param: torch.Tensor, owner: str, name: str, qualified: str) -> None:
        tracer = self.tracer
        module = tracer.module_named(owner)
        reached = tracer.reached_calls(owner)
        if not reached:  # outside a backward (a hook run by hand), or no call reached: the latest call
            reached = [(max(tracer.call_count(owner) - 1, 0), tracer.last_forward_index(owner))]
        (last, forward_index), reached = reached[-1], [call for call, _ in reached]
        notes = []
        if len(reached) > 1:
            notes.append(f"accumulated over calls {_calls_text(reached)} of this module (every call whose output this "
                         f"backward reaches): the gradient is their sum; the firing is filed under call {reached[-1]}, the last")
        tensors = [tracer.describe(name, param.grad, target=qualified)] if param.grad is not None else []
        live = {name: param.grad}
        # Under DDP and FSDP: which gradient this is (grad_kinds.py).
        said, pieces = self._kinds.notes(param, owner) if self._kinds is not None else ((), ())
        notes.extend(said)
        for piece in pieces:
            piece_name = f"{piece.name}.grad"
            tensors.append(tracer.describe(piece_name, piece.tensor, target=piece.name, extra=True))
            live[piece_name] = piece.tensor
        before = self._bad_before.pop(id(param), None)
        if before is not None:
            tensors.append(before)
        cached = self._nodes.get(id(param))
        if cached is None or cached[0] is not param:
            cached = self._nodes[id(param)] = (param, get_gradient_edge(param).node)
        tracer.fire_event(
            hook="param_grad",
            module=module,
            call=last,
            tensors=tensors,
            live=live,
            node=cached[1],
            source=_definition(module),
            forward_index=forward_index,
            notes=notes,
        )


# Types whose hook registration is torch.Tensor's own (no __torch_function__ of their own).
_PLAIN = (torch.Tensor, nn.Parameter)


def _names_of(params) -> dict[int, tuple[str, str, str]]:
    """id(param) -> (owner, "<short>.grad", qualified), from named parameters (or a walk)."""
    params = params.params if isinstance(params, ModelWalk) else params
    out = {}
    for qualified, param in params:
        owner, _, short = qualified.rpartition(".")
        out[id(param)] = (owner, f"{short}.grad", qualified)  # one string for every firing of it
    return out


def _calls_text(calls: list[int]) -> str:
    """"0..3" for a run of calls, "0, 2" otherwise."""
    if calls == list(range(calls[0], calls[-1] + 1)):
        return f"{calls[0]}..{calls[-1]}"
    return ", ".join(map(str, calls))


def _definition(module: nn.Module) -> SourceLocation | None:
    return definition_location(type(module))
