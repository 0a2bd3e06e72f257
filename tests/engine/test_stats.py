"""Tensor summaries (engine/summaries/stats.py) against numbers computed here with numpy / torch."""

import math

import numpy as np
import pytest
import torch

from hooktui.engine.summaries import stats
from hooktui.engine.summaries.stats import HIST_BINS, StatsOptions, describe


def expected_stats(values: np.ndarray) -> dict:
    v = values.astype(np.float64).reshape(-1)
    finite = v[np.isfinite(v)]
    out = {
        "count": v.size,
        "finite": finite.size,
        "nan": int(np.isnan(v).sum()),
        "posinf": int(np.isposinf(v).sum()),
        "neginf": int(np.isneginf(v).sum()),
        "zeros": int((v == 0).sum()),
    }
    if finite.size:
        out.update(
            min=finite.min(),
            max=finite.max(),
            mean=finite.mean(),
            absmax=np.abs(finite).max(),
            norm=np.sqrt((finite**2).sum()),
            std=finite.std(ddof=1) if finite.size > 1 else None,
        )
    return out


def check(record, values: np.ndarray, rel=1e-5, abs_=1e-6):
    want = expected_stats(values)
    s = record.stats
    for key in ("count", "finite", "nan", "posinf", "neginf", "zeros"):
        assert getattr(s, key) == want[key], key
    if want["finite"]:
        for key in ("min", "max", "mean", "absmax", "norm"):
            assert math.isclose(getattr(s, key), want[key], rel_tol=rel, abs_tol=abs_), (key, getattr(s, key), want[key])
        if want["std"] is None:
            assert s.std is None
        else:
            assert math.isclose(s.std, want["std"], rel_tol=rel, abs_tol=abs_)
        assert sum(s.hist) == want["finite"] and len(s.hist) == HIST_BINS
        assert s.hist_range == [s.min, s.max]
    else:
        assert s.min is None and s.max is None and s.mean is None and s.hist == []
    assert not s.approx and s.sampled == values.size


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_float_dtypes(dtype):
    t = (torch.randn(5, 7, generator=torch.Generator().manual_seed(0)) * 3).to(dtype)
    record = describe("x", t)
    reference = t.float().numpy() if dtype in (torch.float16, torch.bfloat16) else t.numpy()
    check(record, reference, rel=1e-12 if dtype == torch.float64 else 1e-5)
    assert record.dtype == str(dtype).removeprefix("torch.")
    assert record.shape == [5, 7] and record.values_shape == [5, 7] and record.values_complete
    assert record.values == reference.astype(np.float64).reshape(-1).tolist()


def test_float64_keeps_full_precision():
    t = torch.tensor([1.0 + 2**-40, 1.0], dtype=torch.float64)
    record = describe("x", t)
    assert record.values == [1.0 + 2**-40, 1.0]
    assert record.stats.max == 1.0 + 2**-40


def test_int64_embedding_ids_exact():
    ids = torch.tensor([[0, 5, 16777217], [2**40 + 1, 3, 0]], dtype=torch.int64)  # not exact in float32
    record = describe("ids", ids)
    assert record.dtype == "int64"
    assert record.values == [float(v) for v in ids.reshape(-1).tolist()]
    check(record, ids.numpy(), rel=1e-12)


def test_bool():
    t = torch.tensor([True, False, True, True])
    record = describe("mask", t)
    assert record.dtype == "bool" and record.values == [1.0, 0.0, 1.0, 1.0]
    check(record, t.numpy())
    assert record.stats.zeros == 1


def test_complex_is_summarised_by_magnitude():
    t = torch.tensor([3 + 4j, 0 + 0j, -1 + 0j, 0 - 2j], dtype=torch.complex64)
    record = describe("z", t)
    assert record.stats.of == "abs" and record.dtype == "complex64"
    check(record, np.abs(t.numpy()))
    assert record.values == [5.0, 0.0, 1.0, 2.0]


def test_empty():
    record = describe("e", torch.empty(0, 3))
    assert record.shape == [0, 3] and record.stats.count == 0
    assert record.values == [] and record.stats.min is None and record.stats.nan == 0


def test_zero_dim():
    record = describe("s", torch.tensor(2.5))
    assert record.shape == [] and record.values == [2.5] and record.values_shape == []
    assert record.values_complete
    assert (record.stats.count, record.stats.min, record.stats.max, record.stats.mean) == (1, 2.5, 2.5, 2.5)
    assert record.stats.std is None


def test_nan_and_infinities_are_counted_and_left_out_of_the_numbers():
    t = torch.tensor([1.0, float("nan"), float("inf"), -float("inf"), 0.0, 2.0, float("nan")])
    record = describe("g", t)
    check(record, t.numpy())
    assert (record.stats.nan, record.stats.posinf, record.stats.neginf) == (2, 1, 1)
    assert record.stats.nonfinite == 4
    assert (record.stats.min, record.stats.max, record.stats.mean) == (0.0, 2.0, 1.0)
    assert math.isnan(record.values[1]) and record.values[2] == math.inf and record.values[3] == -math.inf


def test_all_nan():
    record = describe("g", torch.full((3,), float("nan"), dtype=torch.float16))
    check(record, np.full(3, np.nan))
    assert record.stats.finite == 0 and record.stats.norm is None


def test_all_zeros():
    record = describe("z", torch.zeros(4, 4))
    check(record, np.zeros((4, 4)))
    assert record.stats.std == 0.0 and record.stats.hist[0] == 16 and sum(record.stats.hist[1:]) == 0


def test_requires_grad_and_grad_fn_are_recorded_without_touching_the_graph():
    a = torch.ones(3, requires_grad=True)
    b = a * 2
    record = describe("b", b)
    assert record.requires_grad is True and record.grad_fn == "MulBackward0"
    b.sum().backward()
    assert torch.equal(a.grad, torch.full((3,), 2.0))


def test_missing():
    record = stats.missing("grad_input[0]", "this input does not require grad", target="args[0]")
    assert record.is_missing and record.shape is None and record.stats is None


def test_huge_tensor_is_sampled_with_a_bounded_block_of_values():
    n = 40_000_000
    t = torch.arange(n, dtype=torch.float32).reshape(4000, 10000)
    options = StatsOptions()
    record = describe("big", t, options)
    s = record.stats
    if options.defer_host:  # the device path reads every element in its one fused pass
        assert not s.approx and s.count == s.sampled == n and s.max == float(t.max())
    else:
        assert s.approx and s.count == n and 0 < s.sampled <= options.max_exact
    assert len(record.values) <= options.max_values
    rows, cols = record.values_shape
    assert rows * cols == len(record.values) and rows > 1 and cols > 1  # a 2-D block for the grid
    assert record.values == t[:rows, :cols].reshape(-1).double().tolist()
    assert not record.values_complete
    # An evenly strided sample of 0..n-1 has mean ~ (n-1)/2 and spans nearly all of it.
    assert math.isclose(s.mean, (n - 1) / 2, rel_tol=0.01)
    assert s.min == 0.0 and s.max > 0.99 * (n - 1)
    assert sum(s.hist) == (s.hist_sampled or s.sampled)  # the histogram may come from a smaller sample
    assert s.nonfinite == 0


def test_huge_tensor_counts_every_non_finite_value():
    n = 40_000_000
    t = torch.zeros(n)
    t[1::9_999_991] = float("nan")  # 5 NaNs, off any sampling stride
    t[7] = float("inf")
    record = describe("big", t)
    assert record.stats.approx != StatsOptions().defer_host  # the device path is exact (one full pass)
    assert record.stats.nonfinite == int((~torch.isfinite(t)).sum()) == 6
    assert len(record.values) <= StatsOptions().max_values


def test_sampling_threshold_and_value_budget_follow_the_options():
    t = torch.arange(1000, dtype=torch.float32)
    options = StatsOptions(max_exact=100, max_values=10)
    record = describe("x", t, options)
    assert record.stats.approx != options.defer_host  # the device path reads every element
    assert record.stats.sampled == (1000 if options.defer_host else 100)
    assert record.values == [float(i) for i in range(10)] and record.values_shape == [10]
    exact = describe("x", t, StatsOptions(max_exact=1000, max_values=10))
    assert not exact.stats.approx and exact.stats.mean == 499.5
    none = describe("x", t, StatsOptions(keep_values=False))
    assert none.values is None and none.stats.count == 1000


def test_leading_block_of_a_3d_tensor():
    t = torch.arange(8 * 100 * 100, dtype=torch.float32).reshape(8, 100, 100)
    for budget in (4096, 1024, 7):
        record = describe("x", t, StatsOptions(max_values=budget))
        k = record.values_shape
        assert len(record.values) == k[0] * k[1] * k[2] <= budget
        assert record.values == t[: k[0], : k[1], : k[2]].reshape(-1).double().tolist()


@pytest.mark.parametrize(
    "view",
    [
        lambda t: t.transpose(0, 2),  # strides out of order
        lambda t: t[3:, 10:90:3, 1:],  # an offset, strided slice
        lambda t: t[:1].expand(40, 100, 100),  # stride 0: one row repeated
    ],
    ids=["transposed", "offset-slice", "expanded"],
)
@pytest.mark.parametrize("defer", [False, True], ids=["host", "deferred"])
def test_value_block_and_stats_of_a_non_contiguous_view(view, defer):
    """Deferred: the device path, which reads the view through its strides (no copy first)."""
    base = torch.arange(8 * 100 * 100, dtype=torch.float32).reshape(8, 100, 100).sin()
    t = view(base)
    record = describe("x", t, StatsOptions(max_values=1024, defer_host=defer))
    k = record.values_shape
    assert record.values == t[tuple(slice(0, n) for n in k)].reshape(-1).double().tolist()
    # Larger than a snapshot: exact moments, a histogram of an evenly strided sample.
    want, s = expected_stats(t.numpy()), record.stats
    for key in ("min", "max", "mean", "absmax", "norm", "std"):
        assert math.isclose(getattr(s, key), want[key], rel_tol=1e-5, abs_tol=1e-6), key
    flat = t.reshape(-1).double()
    sample = flat[:: math.ceil(t.numel() / StatsOptions().snapshot_size)]
    assert s.hist_sampled == sample.numel() == sum(s.hist)
    assert s.hist == torch.histc(sample, HIST_BINS, s.min, s.max).long().tolist()


@pytest.mark.parametrize(
    "make",
    [
        lambda g: torch.randn(50, 101, generator=g) * 7 + 2,
        lambda g: (torch.randn(50, 101, generator=g, dtype=torch.float64) * 1e3),
        lambda g: torch.randn(50, 101, generator=g).to(torch.float16),
        lambda g: torch.randn(50, 101, generator=g).to(torch.bfloat16),
        lambda g: torch.randint(-2**40, 2**40, (50, 101), generator=g),
        lambda g: torch.randint(0, 255, (50, 101), generator=g).to(torch.uint8),
        lambda g: torch.randn(50, 101, generator=g) > 0.3,
        lambda g: torch._neg_view(torch.randn(50, 101, generator=g)),  # numpy refuses to view it
        lambda g: torch.where(torch.randn(50, 101, generator=g) > 1.5, float("nan"), torch.randn(50, 101, generator=g)),
    ],
    ids=["float32", "float64", "float16", "bfloat16", "int64", "uint8", "bool", "neg-view", "with-nan"],
)
@pytest.mark.parametrize("defer", [False, True], ids=["host", "deferred"])
def test_exact_moments_of_a_tensor_larger_than_a_snapshot(make, defer):
    """Past `snapshot_size` the moments are computed at the firing (host: sum by torch, min,
    max and the sum of squares by numpy where it can view the tensor; deferred: partial
    sums in float64 on the device): exact, every dtype."""
    t = make(torch.Generator().manual_seed(3))
    assert t.numel() > StatsOptions().snapshot_size
    reference = (t.resolve_neg().float() if t.dtype in (torch.float16, torch.bfloat16) else t.resolve_neg()).numpy()
    want, s = expected_stats(reference), describe("x", t, StatsOptions(defer_host=defer)).stats
    assert not s.approx and s.count == t.numel()
    for key in ("finite", "nan", "posinf", "neginf"):
        assert getattr(s, key) == want[key], key
    assert (s.min, s.max) == (want["min"], want["max"])  # exact: no rounding in a min or a max
    rel = 1e-12 if t.dtype in (torch.float64, torch.int64, torch.uint8, torch.bool) else 1e-5
    for key in ("mean", "absmax", "norm", "std"):
        assert math.isclose(getattr(s, key), want[key], rel_tol=rel), (key, getattr(s, key), want[key])


def test_a_float32_sum_of_squares_that_overflows_is_exact_and_warns_nothing():
    import warnings


    from hooktui.engine.summaries.stats import describe

    t = torch.full((10_000,), 3e20, dtype=torch.float32)  # squares overflow float32, not float64
    t[::2] = -3e20
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "overflow encountered in dot" was a RuntimeWarning
        stats = describe("x", t).stats
    want = math.sqrt(float((t.double() ** 2).sum()))
    assert stats.norm == pytest.approx(want, rel=1e-12)
