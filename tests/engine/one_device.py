"""`--device cuda` without a GPU: the model and its inputs go to the `meta` device, as
`--device cuda` moves them to CUDA, and `OneDevice` raises where a torch function is
handed tensors on two devices, as CUDA kernels do ("Expected all tensors to be on the
same device"). A tensor the model file makes itself without `device=` is on the CPU and
is caught at its first use beside the model's tensors.

torch's own checks are not enough on `meta`: many meta kernels (`mm`, `linear`) accept a
CPU operand. Like CUDA, a 0-dim CPU tensor (a scalar) is allowed beside any device.
"""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten


class DeviceMismatch(RuntimeError):
    pass


def devices_of(args, kwargs) -> set[str]:
    leaves, _ = tree_flatten((args, kwargs or {}))
    return {
        str(t.device) for t in leaves
        if isinstance(t, torch.Tensor) and not (t.device.type == "cpu" and t.dim() == 0)
    }


class OneDevice(TorchFunctionMode):
    """Every torch function called inside sees the tensors of one device only."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        devices = devices_of(args, kwargs)
        if len(devices) > 1:
            name = getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func))
            raise DeviceMismatch(f"Expected all tensors to be on the same device, but found at least two devices, "
                                 f"{', '.join(sorted(devices))} (in {name})")
        return func(*args, **(kwargs or {}))
