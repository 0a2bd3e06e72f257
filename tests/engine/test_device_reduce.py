"""The device summary's reduction (engine/summaries/device_reduce.py): the Triton kernel, run on the
CPU through Triton's interpreter in a process of its own (reduce_cases.py), and the torch
fallback, against numpy; and how many kernels summarising one tensor launches."""

import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from hooktui.engine.summaries import device_reduce, lazy_stats
from hooktui.engine.summaries.stats import StatsOptions, describe
from reduce_cases import cases, launches_of_a_snapshot, sample_step

HERE = Path(__file__).parent
CASES = cases()


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory):
    """The kernel's partials and samples for every case, from Triton's interpreter."""
    pytest.importorskip("triton", reason="triton is in the test extra; it installs on Linux")
    out = tmp_path_factory.mktemp("triton") / "results.pt"
    env = dict(os.environ, HOOKTUI_TRITON_INTERPRET="1")
    done = subprocess.run([sys.executable, str(HERE / "reduce_cases.py"), str(out)], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return torch.load(out)


def _check(name: str, partials: np.ndarray, sample: np.ndarray) -> None:
    """Counts exact, min and max exact, moments within float64 rounding, the sample the
    evenly strided one: all computed here with numpy from the tensor."""
    t, step = CASES[name]
    work = t.reshape(-1)[::step].double().numpy()  # every dtype is exact in float64
    counts = (int(np.isnan(work).sum()), int(np.isposinf(work).sum()), int(np.isneginf(work).sum()))
    assert device_reduce.nonfinite(partials) == counts
    finite = work[np.isfinite(work)]
    (n, lo, hi, mean, std, norm), whole = device_reduce.moments(partials)
    assert whole and n == finite.size
    if finite.size == 0:
        assert lo is None and mean is None
    else:
        assert (lo, hi) == (finite.min(), finite.max())
        assert math.isclose(mean, finite.mean(), rel_tol=1e-12, abs_tol=1e-12), (mean, finite.mean())
        assert math.isclose(norm, math.sqrt((finite**2).sum()), rel_tol=1e-12)
        if finite.size > 1:
            assert math.isclose(std, finite.std(ddof=1), rel_tol=1e-9, abs_tol=1e-12), (std, finite.std(ddof=1))
        else:
            assert std is None
    assert np.array_equal(sample, work[:: sample_step(work.size)], equal_nan=True)


@pytest.mark.parametrize("name", list(CASES))
def test_the_triton_kernel_through_the_interpreter(interpreted, name):
    partials, sample = interpreted["results"][name]
    assert interpreted["interpreted"]  # the kernel ran, not the fallback
    assert partials.shape[1] == device_reduce.COLUMNS and partials.shape[0] <= device_reduce.MAX_PROGRAMS
    _check(name, partials.numpy(), sample.numpy())


@pytest.mark.parametrize("name", list(CASES))
def test_the_torch_fallback(name):
    t, step = CASES[name]
    n = math.ceil(t.numel() / step)
    assert not device_reduce.uses_triton(t)  # a CPU tensor, no interpreter switch in this process
    partials, sample = device_reduce.summarise(t, step, n, sample_step(n))
    _check(name, partials.numpy(), sample.numpy())


def test_two_launches_per_tensor_with_triton(interpreted):
    """The fused reduction (sample included) and the value block's copy: nothing else
    launches a kernel, whatever the dtype or layout."""
    for name, (ops, kernels) in interpreted["launches"].items():
        assert kernels == 1 and ops == ["clone"], (name, ops, kernels)


def test_launches_per_tensor_of_the_torch_fallback():
    """Where triton is missing: the bound reached with torch ops (was ~33 before issue 22)."""
    for name, bound in (("float32-3001", 21), ("bfloat16-1000", 21), ("transposed", 23)):  # +2: copied flat first
        ops, kernels = launches_of_a_snapshot(CASES[name][0], device_reduce, StatsOptions(defer_host=True))
        assert kernels == 0 and len(ops) <= bound, (name, ops)


def test_the_sample_and_the_partials_are_copies_taken_at_the_firing():
    t = torch.arange(10_000, dtype=torch.float64)  # float64: the fallback's cast is no copy
    record = describe("x", t, StatsOptions(defer_host=True))
    t.fill_(-1)
    s = record.stats
    assert (s.min, s.max, s.mean) == (0.0, 9999.0, 4999.5)
    sample = np.arange(0, 10_000, math.ceil(10_000 / 4096), dtype=np.float64)  # evenly strided, before the fill
    bins = np.minimum(np.floor(sample / 9999.0 * 16), 15).astype(int)
    assert s.hist == np.bincount(bins, minlength=16).tolist()


def test_float64_values_too_large_for_sums_of_squares_keep_exact_counts_min_and_max():
    """Beyond ~1e154 a float64 sum of squares overflows: the count, min and max stay exact,
    mean, std and norm come from the sample (all values here: exact)."""
    values = np.array([1e200, -3e199, 5e199, 2.0] * 1000)  # within a snapshot: the sample is every value
    s = describe("x", torch.tensor(values), StatsOptions(defer_host=True)).stats
    assert (s.finite, s.min, s.max) == (values.size, values.min(), values.max())
    scale = np.abs(values).max()
    assert math.isclose(s.mean, values.mean(), rel_tol=1e-9)
    assert math.isclose(s.std, (values / scale).std(ddof=1) * scale, rel_tol=1e-6)
    assert math.isclose(s.norm, math.sqrt(((values / scale) ** 2).sum()) * scale, rel_tol=1e-3)
    lazy_stats.flush_pending()


@pytest.mark.parametrize("dtype", ["*fp32", "*bf16", "*fp64", "*i64", "*u8"])
def test_the_kernel_compiles_for_an_h200(monkeypatch, dtype):
    """What the interpreter cannot check (types, what the compiler accepts): the kernel is
    compiled here, without a GPU, to a cubin for sm_90 (the H200 of issue 22)."""
    triton = pytest.importorskip("triton", reason="triton is in the test extra; it installs on Linux")
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    monkeypatch.setattr(device_reduce, "tl", triton.language)  # what uses_triton sets on a CUDA machine
    fn = triton.jit(device_reduce._partials_kernel, do_not_specialize=device_reduce._INT_ARGS)
    ints = {name: "i32" for name in device_reduce._INT_ARGS} | {"s0": "i64"}  # a stride past 2^31 is int64
    signature = {"x_ptr": dtype, **ints, "sample_ptr": "*fp64", "out_ptr": "*fp64", "BLOCK": "constexpr"}
    signature = {name: signature[name] for name in fn.arg_names}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # triton's notice about its FP-fusion default
        kernel = triton.compile(ASTSource(fn, signature, constexprs={"BLOCK": device_reduce.BLOCK}),
                                target=GPUTarget("cuda", 90, 32), options={"num_warps": 8})
    assert kernel.asm["cubin"]
