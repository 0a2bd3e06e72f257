"""One walk of the model's modules, parameters and buffers, shared by everything that sets
up a run: the setup needed them over a dozen times, and each walk of a 129-module model
costs 0.2-0.4 ms (a few percent of a small model's step).

Names are the user's: without the prefixes of wrappers (wrappers.py); `raw` keeps the
names PyTorch gives, where they differ."""

from __future__ import annotations

from torch import nn
from torch.nn.parameter import is_lazy

from .wrappers import user_names


class ModelWalk:
    __slots__ = ("modules", "params", "buffers", "raw")

    def __init__(self, model: nn.Module) -> None:
        named = list(model.named_modules())
        shown = user_names(named)
        self.modules: list[tuple[str, nn.Module]] = [(shown[raw], m) for raw, m in named]
        # Shown name -> raw name, for the modules whose names differ.
        self.raw: dict[str, str] = {shown[raw]: raw for raw, _ in named if shown[raw] != raw}
        if not self.raw:  # the common case: PyTorch's own walk, same order, same names
            self.params = list(model.named_parameters())
            self.buffers = list(model.named_buffers())
            return
        # As named_parameters() walks them (each tensor once, at its first owner), named
        # after their owner's shown name.
        self.params = _members(self.modules, "_parameters")
        self.buffers = _members(self.modules, "_buffers")

    @property
    def has_lazy(self) -> bool:
        """A lazy module's parameters or buffers exist only after its first forward."""
        return any(is_lazy(t) for _, t in self.params) or any(is_lazy(t) for _, t in self.buffers)


def _members(modules: list[tuple[str, nn.Module]], attr: str) -> list:
    seen: set[int] = set()
    out = []
    for owner, module in modules:
        for leaf, tensor in getattr(module, attr).items():
            if tensor is None or id(tensor) in seen:
                continue
            seen.add(id(tensor))
            out.append((f"{owner}.{leaf}" if owner else leaf, tensor))
    return out
