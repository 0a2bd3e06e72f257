"""A large tensor holding NaN or Inf is counted without a temporary as large as itself
(issue 35, item 5: +862 MB for 1e8 float32 elements). Peak memory is measured in
benchmarks/big_activation.py; here, what the counting functions are handed."""

from __future__ import annotations

import torch

from hooktui.engine.summaries import stats


def test_nonfinite_counts_of_a_large_tensor_take_it_in_blocks(monkeypatch):
    x = torch.ones(4 * stats.StatsOptions().max_exact + 7)
    x[[3, 5, 1 << 21]] = float("nan")
    x[[9, 3 << 20]] = float("inf")
    x[-1] = float("-inf")
    expected = (int(torch.isnan(x).sum()), int(torch.isposinf(x).sum()), int(torch.isneginf(x).sum()))
    handed = []
    for name in ("isnan", "isposinf", "isneginf", "isfinite"):
        real = getattr(torch, name)

        def spy(t, *args, _real=real, **kwargs):
            handed.append(t.numel())
            return _real(t, *args, **kwargs)

        monkeypatch.setattr(torch, name, spy)
    record = stats.describe("x", x)
    got = record.stats
    assert (got.nan, got.posinf, got.neginf) == expected
    assert handed and max(handed) <= x.numel() // 4, max(handed)  # never the whole tensor at once
