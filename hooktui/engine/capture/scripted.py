"""TorchScript children (`torch.jit.script(...)` inside an eager model).

PyTorch refuses module hooks on a ScriptModule ("register_forward_pre_hook is not supported
on ScriptModules"), so its own hooks can never fire there either. hooktui hooks every other
module, and the forward firing of the module that holds a scripted child says why that
child (and everything inside it) has no firings of its own.
"""

from __future__ import annotations

import torch
from torch import nn


def is_scripted(module: nn.Module) -> bool:
    return isinstance(module, torch.jit.ScriptModule)


def notes_by_parent(modules: list[tuple[str, nn.Module]]) -> dict[str, list[str]]:
    """Parent module name -> a note for each scripted child it holds (the outermost ones)."""
    scripted = {name for name, module in modules if is_scripted(module)}
    notes: dict[str, list[str]] = {}
    for name in sorted(scripted):
        parent = name.rpartition(".")[0]
        if name == "" or _inside(parent, scripted):
            continue
        notes.setdefault(parent, []).append(
            f"{name} is a TorchScript module (torch.jit.script): PyTorch cannot put module hooks on it, so it and "
            "its submodules have no firings; what it computes is inside this call"
        )
    return notes


def _inside(name: str, scripted: set[str]) -> bool:
    while True:
        if name in scripted:
            return True
        if not name:
            return False
        name = name.rpartition(".")[0]
