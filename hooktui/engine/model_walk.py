"""One walk of the model's modules, parameters and buffers, shared by everything that sets
up a run: the setup needed them over a dozen times, and each walk of a 129-module model
costs 0.2-0.4 ms (a few percent of a small model's step)."""

from __future__ import annotations

from torch import nn
from torch.nn.parameter import is_lazy


class ModelWalk:
    __slots__ = ("modules", "params", "buffers")

    def __init__(self, model: nn.Module) -> None:
        self.modules: list[tuple[str, nn.Module]] = list(model.named_modules())
        self.params = list(model.named_parameters())
        self.buffers = list(model.named_buffers())

    @property
    def has_lazy(self) -> bool:
        """A lazy module's parameters or buffers exist only after its first forward."""
        return any(is_lazy(t) for _, t in self.params) or any(is_lazy(t) for _, t in self.buffers)
