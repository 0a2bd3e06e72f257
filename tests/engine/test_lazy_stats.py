"""Lazy tensor summaries (engine/summaries/stats.py, engine/summaries/lazy_stats.py): what is exact at once,
what is computed on first read, and that it is the tensor as it was at its firing.
Every expectation is computed here with numpy / plain torch, never taken from the engine."""

import math

import numpy as np
import pytest
import torch
from torch import nn

import hooktui
from hooktui.engine.summaries import lazy_stats
from hooktui.engine.records.records import LazyTensorRecord
from hooktui.engine.run.session import Session
from hooktui.engine.summaries.stats import HIST_BINS, StatsOptions, describe

SMALL, LARGE = 7, 10_000  # LARGE is above the default snapshot_size: the moments path
DEFER = StatsOptions(defer_host=True)  # the CUDA path, run on the CPU
HOST = StatsOptions(defer_host=False)  # the CPU path, whatever HOOKTUI_DEVICE_PATH says


def _with_nonfinite(n: int, dtype: torch.dtype) -> torch.Tensor:
    t = torch.randn(n, generator=torch.Generator().manual_seed(n)).to(dtype)
    if dtype.is_floating_point or dtype.is_complex:
        t[1] = float("nan")
        t[n // 2] = float("inf")
        t[n - 1] = -float("inf")
        t[n - 2] = float("nan")
    return t


def _is_resolved(record) -> bool:
    try:
        object.__getattribute__(record, "stats")
        return True
    except AttributeError:
        return False


DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128,
          torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64, torch.bool]


@pytest.mark.parametrize("options", [StatsOptions(), DEFER, StatsOptions(max_exact=100)], ids=["host", "deferred", "sampled"])
@pytest.mark.parametrize("n", [SMALL, LARGE])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_nonfinite_counts_are_exact_for_every_dtype(dtype, n, options):
    if dtype == torch.bool:
        t = torch.arange(n) % 3 == 0
    elif not (dtype.is_floating_point or dtype.is_complex):
        t = (torch.arange(n) % 7 - 3).to(dtype) if dtype != torch.uint8 else (torch.arange(n) % 7).to(dtype)
    else:
        t = _with_nonfinite(n, dtype)
    magnitude = t.abs() if dtype.is_complex else t
    want = (
        (int(torch.isnan(magnitude).sum()), int(torch.isposinf(magnitude).sum()), int(torch.isneginf(magnitude).sum()))
        if magnitude.is_floating_point() else (0, 0, 0)
    )
    record = describe("x", t, options)
    if options.defer_host:
        lazy_stats.flush_pending()
    assert record.nonfinite_counts == want
    if not options.defer_host:
        assert not _is_resolved(record)  # known without computing the other statistics
    s = record.stats
    assert (s.nan, s.posinf, s.neginf, s.nonfinite) == (*want, sum(want))
    assert s.count == n


def _expected(values: np.ndarray) -> dict:
    v = values.astype(np.float64).reshape(-1)
    finite = v[np.isfinite(v)]
    lo, hi = finite.min(), finite.max()
    span = max(hi - lo, np.finfo(np.float64).tiny)
    # The documented histogram: 16 equal bins over [min, max] of the finite values.
    bins = np.clip(np.floor((finite - lo) / span * HIST_BINS), 0, HIST_BINS - 1).astype(int)
    return dict(
        finite=finite.size, min=lo, max=hi, mean=finite.mean(), std=finite.std(ddof=1),
        norm=math.sqrt((finite**2).sum()), zeros=int((finite == 0).sum()),
        hist=np.bincount(bins, minlength=HIST_BINS).tolist(),
    )


CASES = {
    "small": lambda: torch.randn(5, 7, generator=torch.Generator().manual_seed(1)),
    "large": lambda: torch.randn(100, 100, generator=torch.Generator().manual_seed(2)) * 3 + 1,
    "large, offset": lambda: torch.rand(100, 100, generator=torch.Generator().manual_seed(3)) + 1000,
    "relu-like": lambda: torch.relu(torch.randn(50, 200, generator=torch.Generator().manual_seed(4))),
    "with nonfinite": lambda: _with_nonfinite(LARGE, torch.float32).reshape(100, 100),
    "int64": lambda: torch.arange(-5000, 5000, dtype=torch.int64).reshape(100, 100),
    "float64": lambda: torch.randn(9000, dtype=torch.float64, generator=torch.Generator().manual_seed(5)),
}


@pytest.mark.parametrize("options", [StatsOptions(), DEFER], ids=["host", "deferred"])
@pytest.mark.parametrize("case", list(CASES))
def test_lazy_statistics_equal_eager_ones(case, options):
    t = CASES[case]()
    record = describe("x", t, options)
    want = _expected(t.numpy())
    s = record.stats
    assert s.finite == want["finite"]
    assert s.min == want["min"] and s.max == want["max"]  # min and max are exact
    for key in ("mean", "norm"):
        assert math.isclose(getattr(s, key), want[key], rel_tol=1e-6, abs_tol=1e-9), key
    assert math.isclose(s.std, want["std"], rel_tol=1e-5), (s.std, want["std"])
    assert s.hist_range == [want["min"], want["max"]]
    if s.hist_sampled == 0:  # all values were kept: histogram and zero count exact
        assert s.hist == want["hist"] and s.zeros == want["zeros"]
    else:
        assert sum(s.hist) == s.hist_sampled < want["finite"]
        # An evenly strided sample: the histogram's shape follows the whole one.
        whole = np.array(want["hist"]) / want["finite"]
        assert np.abs(np.array(s.hist) / s.hist_sampled - whole).max() < 0.05
        assert abs(s.zeros - want["zeros"]) <= 0.05 * want["finite"]
    block = t[tuple(slice(0, k) for k in record.values_shape)]
    assert np.array_equal(record.values, block.double().reshape(-1).numpy(), equal_nan=True)


@pytest.mark.parametrize("options", [StatsOptions(), DEFER], ids=["host", "deferred"])
@pytest.mark.parametrize("n", [SMALL, LARGE])
def test_a_tensor_changed_in_place_after_its_firing_shows_the_values_it_had(n, options):
    t = torch.randn(n, generator=torch.Generator().manual_seed(7)) - 0.5
    before = t.clone().numpy()
    record = describe("x", t, options)
    t.mul_(0).add_(42)  # the model reuses the buffer after the firing
    want = _expected(before)
    assert record.stats.min == want["min"] and record.stats.max == want["max"]
    assert math.isclose(record.stats.mean, want["mean"], rel_tol=1e-6)
    assert record.values == before[: len(record.values)].astype(np.float64).tolist()
    # And a later firing of the changed tensor is not served the old summary.
    again = describe("x", t, options)
    assert again.stats.min == again.stats.max == 42.0


def test_in_place_relu_after_a_layer_keeps_the_layer_output_as_it_was():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 200), nn.ReLU(inplace=True), nn.Linear(200, 1))
    x = torch.randn(64, 6)
    seen = {}

    def keep(module, args, out):
        seen["out"] = out.detach().clone()  # returns None: the output is not replaced

    handle = model[0].register_forward_hook(keep)
    model(x)
    handle.remove()
    trace = hooktui.record(model, x)
    fired = next(e for e in trace.events if e.hook == "forward" and e.module == "0")
    out = next(t for t in fired.tensors if t.name == "output")
    want = _expected(seen["out"].numpy())
    assert want["min"] < 0  # the ReLU made these zero afterwards
    assert out.stats.min == want["min"] and math.isclose(out.stats.mean, want["mean"], rel_tol=1e-6)


def test_an_unchanged_tensor_seen_again_shares_its_summary():
    t = torch.randn(50, 50)
    a, b = describe("out", t), describe("args[0]", t)
    assert a._summary is b._summary and a.name != b.name
    t.add_(1)
    assert describe("x", t)._summary is not a._summary


@pytest.mark.parametrize("options", [StatsOptions(), DEFER], ids=["host", "deferred"])
@pytest.mark.parametrize("repeat", [1, 5000])
def test_statistics_of_finite_values_never_overflow(repeat, options):
    """Issue 7, pattern 10: an HF attention mask [0, finfo(float32).min] and [1e20, -1e20]."""
    low = float(torch.finfo(torch.float32).min)
    for pair in ([0.0, low], [1e20, -1e20]):
        t = torch.tensor(pair * repeat, dtype=torch.float32)
        exact = np.array(pair * repeat, dtype=np.float64)
        s = describe("mask", t, options).stats
        assert s.nonfinite == 0
        assert math.isclose(s.mean, exact.mean(), rel_tol=1e-9, abs_tol=1e-3), (pair, s.mean)
        scale = np.abs(exact).max()
        assert math.isclose(s.std, (exact / scale).std(ddof=1) * scale, rel_tol=1e-6), (pair, s.std)
        assert math.isclose(s.norm, math.sqrt(((exact / scale) ** 2).sum()) * scale, rel_tol=1e-6), (pair, s.norm)


def test_running_through_on_the_deferred_path_reads_nothing_back_until_the_end(monkeypatch):
    """The CUDA path on the CPU: no firing copies a value to the host; one transfer at the end."""
    torch.manual_seed(0)
    model = nn.Sequential(*[layer for _ in range(4) for layer in (nn.Linear(16, 16), nn.GELU())])
    x = torch.randn(8, 16)
    reads = []
    for name in ("item", "tolist", "numpy", "cpu", "__bool__", "__float__", "__int__"):
        original = getattr(torch.Tensor, name)

        def counting(self, *args, _original=original, _name=name, **kwargs):
            reads.append(_name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, counting)
    before = lazy_stats.host_transfers
    per_firing = []
    session = Session(model, x, pause=False, options=DEFER)
    session.run(on_event=lambda event: per_firing.append((lazy_stats.host_transfers - before, len(reads))))
    monkeypatch.undo()
    assert len(per_firing) > 20
    assert per_firing[-1] == (0, 0), per_firing[-1]  # no transfer, no value read, in any firing
    assert lazy_stats.host_transfers - before == 1  # everything gathered once, when the run ended
    records = [t for e in session.events for t in e.tensors if isinstance(t, LazyTensorRecord)]
    assert records and all(r.stats is not None for r in records)
    assert lazy_stats.host_transfers - before == 1  # reading them copies nothing more


def test_past_the_snapshot_budget_the_oldest_firings_keep_their_stats_and_drop_their_values(monkeypatch):
    monkeypatch.setattr(lazy_stats, "SNAPSHOT_BUDGET_BYTES", 64 * 1024)  # room for ~16 of these
    tensors = [torch.full((32, 32), float(i)) for i in range(40)]  # 4 KB each on the host path
    records = [describe("x", t, HOST) for t in tensors]
    oldest, newest = records[0], records[-1]
    assert oldest.values is None  # dropped: the values pane says "no values kept"
    assert oldest.stats.min == oldest.stats.max == 0.0 and oldest.stats.count == 1024
    assert newest.values == [39.0] * 1024 and newest.stats.mean == 39.0
    kept = sum(r.values is not None for r in records)
    assert 8 <= kept <= 17


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int64], ids=str)
def test_summaries_evicted_by_the_budget_keep_exact_statistics(monkeypatch, dtype):
    """Eviction resolves a summary without its value block: its numbers are those of
    the tensor at its firing, computed here with numpy."""
    monkeypatch.setattr(lazy_stats, "SNAPSHOT_BUDGET_BYTES", 16 * 1024)
    tensors = [_with_nonfinite(500 + i, dtype) * (i + 1) for i in range(30)]
    tensors[3][:] = 0  # all zeros
    records = [describe("x", t) for t in tensors]
    assert records[0].values is None  # evicted
    for t, record in zip(tensors, records):
        v = t.double().numpy()
        finite = v[np.isfinite(v)]
        s = record.stats
        assert (s.nan, s.posinf, s.neginf) == (int(np.isnan(v).sum()), int(np.isposinf(v).sum()), int(np.isneginf(v).sum()))
        assert s.finite == finite.size and s.zeros == int((finite == 0).sum())
        assert (s.min, s.max) == (finite.min(), finite.max())
        for got, want in ((s.mean, finite.mean()), (s.std, finite.std(ddof=1)), (s.norm, np.sqrt((finite**2).sum()))):
            assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12)
        lo, hi = finite.min(), finite.max()
        if hi > lo:
            # 16 equal bins over [min, max], the maximum in the last; a value on an edge
            # may fall either side (rounding), so those are allowed to move.
            position = (finite - lo) / (hi - lo) * HIST_BINS
            want_hist = np.bincount(np.minimum(np.floor(position), HIST_BINS - 1).astype(int), minlength=HIST_BINS)
            on_edge = int((np.abs(position - np.round(position)) < 1e-9).sum())
            assert sum(s.hist) == finite.size and np.abs(np.array(s.hist) - want_hist).sum() <= 2 * on_edge
        else:
            assert s.hist[0] == finite.size


@pytest.mark.parametrize("n", [SMALL, LARGE])
def test_device_snapshot_counts_readable_after_its_statistics(n):
    """The CUDA path's first-paint crash (issue 22): statistics read first compact the
    snapshot, and the non-finite counts asked for afterwards must still be there."""
    t = _with_nonfinite(n, torch.float32)
    want = (int(torch.isnan(t).sum()), int(torch.isposinf(t).sum()), int(torch.isneginf(t).sum()))
    record = describe("x", t, DEFER)
    assert math.isfinite(record.stats.mean)
    assert record.nonfinite_counts == want


@pytest.mark.parametrize("options", [HOST, DEFER], ids=["host", "deferred"])
def test_plus_and_minus_inf_together_summarise_quietly_under_warnings_as_errors(options):
    """+Inf and -Inf sum to NaN: numpy warned on the user's stderr ("invalid value
    encountered in reduce") and, where warnings are errors (`-W error`, a test suite's
    filterwarnings), the statistics were lost."""
    import warnings

    for dtype in (torch.float32, torch.float64):
        t = torch.tensor([1.0, float("inf"), -float("inf"), 2.0, float("nan")], dtype=dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            stats = describe("x", t, options).stats
        assert stats is not None
        assert (stats.nan, stats.posinf, stats.neginf) == (
            int(torch.isnan(t).sum()), int(torch.isposinf(t).sum()), int(torch.isneginf(t).sum()))
        finite = t[torch.isfinite(t)].double()
        assert (stats.min, stats.max) == (float(finite.min()), float(finite.max()))
