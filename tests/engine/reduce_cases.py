"""Tensors for the device reduction's tests (test_device_reduce.py), and, run as a script
with HOOKTUI_TRITON_INTERPRET=1, the Triton kernel's results on them through Triton's
interpreter (a process of its own: the switch must be set before triton is imported).

    HOOKTUI_TRITON_INTERPRET=1 python tests/engine/reduce_cases.py OUT.pt
"""

from __future__ import annotations

import math
import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode

SAMPLE = 4096  # StatsOptions().snapshot_size
DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int8, torch.uint8, torch.int32,
          torch.int64, torch.bool]
# 1, small, one partial block, not a multiple of the block; LARGE has more blocks than
# programs (each program loops over chunks), for a few dtypes (the interpreter is slow).
SIZES = [1, 7, 1000, 3001]
LARGE = 66_000
LARGE_DTYPES = [torch.float32, torch.bfloat16, torch.int64]


def _values(n: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(n, generator=g) > 0.4
    if not dtype.is_floating_point:
        lo = 0 if dtype == torch.uint8 else -100
        return torch.randint(lo, 100, (n,), generator=g).to(dtype)
    t = (torch.randn(n, generator=g) * 3 + 1).to(dtype)
    if n >= 7:  # NaN and both infinities, one of them in the first place when there are few
        t[3], t[n // 2], t[n - 1] = math.nan, math.inf, -math.inf
        t[5] = math.nan
    return t


def cases() -> dict[str, tuple[torch.Tensor, int]]:
    """name -> (tensor, step): the reduction reads t.reshape(-1)[::step]."""
    out = {}
    for dtype in DTYPES:
        for n in SIZES + ([LARGE] if dtype in LARGE_DTYPES else []):
            out[f"{str(dtype).removeprefix('torch.')}-{n}"] = (_values(n, dtype, n), 1)
    base = _values(8 * 30 * 40, torch.float32, 11).reshape(8, 30, 40)
    out["transposed"] = (base.transpose(0, 2), 1)
    out["offset-slice"] = (base[2:, 3:28:2, 1:], 1)
    out["expanded"] = (base[:1].expand(6, 30, 40), 1)
    out["bf16-transposed"] = (base.to(torch.bfloat16).transpose(1, 2), 1)
    out["5-d-permuted"] = (torch.randn(3, 4, 5, 6, 7, generator=torch.Generator().manual_seed(12)).permute(4, 2, 0, 3, 1), 1)
    out["strided-sample"] = (_values(50_000, torch.float32, 13), 7)  # an approx summary's every 7th element
    out["first-is-nan"] = (torch.tensor([math.nan, 1e6 + 1, 1e6 + 2, 1e6 + 3, -math.inf]), 1)
    out["large-offset"] = (torch.rand(20_000, generator=torch.Generator().manual_seed(14), dtype=torch.float64) + 1e8, 1)
    out["all-nan"] = (torch.full((2000,), math.nan), 1)
    out["neg-view"] = (torch._neg_view(_values(3001, torch.float32, 15)), 1)  # the sign bit is lazy
    return out


def sample_step(n: int) -> int:
    return max(1, math.ceil(n / SAMPLE))


class CountOps(TorchDispatchMode):
    """Aten ops that launch a kernel on a device: not views, not allocations."""

    FREE = {"empty", "empty_strided", "new_empty", "set_", "detach", "lift_fresh", "scalar_tensor"}

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []
        self.paused = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        if not self.paused and not func.is_view and name not in self.FREE and name != "_unsafe_view":
            self.ops.append(name)
        return func(*args, **(kwargs or {}))


def launches_of_a_snapshot(t: torch.Tensor, device_reduce, options) -> tuple[list[str], int]:
    """(kernels launched by torch ops, triton kernel calls) while one tensor is summarised."""
    from hooktui.engine.summaries import stats

    kernels = 0
    original = device_reduce._launch

    def counted(*args):
        nonlocal kernels
        kernels += 1
        mode.paused = True  # the interpreter's own copies are no launches on a GPU
        try:
            original(*args)
        finally:
            mode.paused = False

    device_reduce._launch = counted
    try:
        with CountOps() as mode:
            stats.describe("x", t, options)
    finally:
        device_reduce._launch = original
    return mode.ops, kernels


def main(path: str) -> None:
    from hooktui.engine.summaries import device_reduce
    from hooktui.engine.summaries.stats import StatsOptions

    results = {}
    for name, (t, step) in cases().items():
        n = math.ceil(t.numel() / step)
        partials, sample = device_reduce.summarise(t, step, n, sample_step(n))
        assert device_reduce.fallback_reason is None, device_reduce.fallback_reason
        results[name] = (partials.clone(), sample.clone())
    launches = {}
    for name in ("float32-66000", "bf16-transposed", "bool-3001", "float16-7"):
        t, _ = cases()[name]
        launches[name] = launches_of_a_snapshot(t, device_reduce, StatsOptions(defer_host=True))
    torch.save({"results": results, "launches": launches, "interpreted": device_reduce.uses_triton(torch.zeros(1))}, path)


if __name__ == "__main__":
    main(sys.argv[1])
