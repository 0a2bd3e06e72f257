"""Tensor summaries: one batched reduction on the tensor's device, one copy to the host.

Cost is bounded: a tensor of more than `max_exact` elements is summarised from an
evenly strided sample (flagged `approx`), and only a leading block of at most
`max_values` values is ever copied to the host for the values pane.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .records import TensorRecord, TensorStats

HIST_BINS = 16
N_SCALARS = 11  # the scalar statistics in front of the histogram in the host buffer


@dataclass(frozen=True)
class StatsOptions:
    max_exact: int = 1 << 20  # elements summarised exactly; larger tensors are sampled
    max_values: int = 1024  # values copied to the host for the values pane
    keep_values: bool = True


def describe(name: str, tensor: torch.Tensor, options: StatsOptions = StatsOptions(), **extra) -> TensorRecord:
    """A TensorRecord for `tensor` with stats and a leading block of values."""
    grad_fn = tensor.grad_fn
    record = TensorRecord(
        name=name,
        shape=list(tensor.shape),
        dtype=str(tensor.dtype).removeprefix("torch."),
        device=str(tensor.device),
        requires_grad=tensor.requires_grad,
        grad_fn=None if grad_fn is None else grad_fn.name(),
        **extra,
    )
    if tensor.is_sparse or tensor.layout != torch.strided or tensor.device.type == "meta":
        record.note = f"{tensor.layout} tensor: no stats"
        return record
    with torch.no_grad():
        record.stats, record.values, record.values_shape = _summarise(tensor.detach(), options)
    return record


def missing(name: str, reason: str, **extra) -> TensorRecord:
    return TensorRecord(name=name, shape=None, missing=reason, **extra)


def _summarise(t: torch.Tensor, options: StatsOptions):
    numel = t.numel()
    if numel == 0:
        return TensorStats(count=0), [], list(t.shape)
    stats_of = "values"
    if t.is_complex():
        t = t.abs()
        stats_of = "abs"
    flat = t.reshape(-1)
    approx = numel > options.max_exact
    # Non-finite values are the loud flag: counted exactly over the whole tensor (one
    # pass) even when everything else comes from a sample.
    exact_nonfinite = (~torch.isfinite(flat)).sum() if approx and flat.is_floating_point() else None
    if approx:
        # An evenly strided view: a fixed number of elements whatever the size.
        flat = flat[:: math.ceil(numel / options.max_exact)]
    work = flat.to(torch.float64 if flat.dtype in _WIDE else torch.float32).contiguous()

    block, block_shape = _leading_block(t, options.max_values) if options.keep_values else (None, None)

    finite = torch.isfinite(work)
    n_finite = finite.sum()
    safe = torch.where(finite, work, torch.zeros((), dtype=work.dtype, device=work.device))
    lo = torch.where(finite, work, torch.full((), math.inf, dtype=work.dtype, device=work.device)).min()
    hi = torch.where(finite, work, torch.full((), -math.inf, dtype=work.dtype, device=work.device)).max()
    denom = n_finite.clamp(min=1).to(work.dtype)
    mean = safe.sum() / denom
    centred = torch.where(finite, work - mean, torch.zeros((), dtype=work.dtype, device=work.device))
    var = (centred * centred).sum() / (n_finite - 1).clamp(min=1).to(work.dtype)
    norm = (safe * safe).sum().sqrt()

    # Histogram of finite values over [lo, hi], computed with integer bin ids so no
    # Python number is needed on the host before the single transfer below.
    span = (hi - lo).clamp(min=torch.finfo(work.dtype).tiny)
    bins = ((safe - lo) / span * HIST_BINS).floor().clamp(0, HIST_BINS - 1).to(torch.int64)
    hist = torch.zeros(HIST_BINS, dtype=work.dtype, device=work.device)
    hist.index_add_(0, bins, finite.to(work.dtype))

    parts = [
        torch.stack(
            [
                n_finite.to(work.dtype),
                lo,
                hi,
                mean,
                var.sqrt(),
                norm,
                torch.isnan(work).sum().to(work.dtype),
                torch.isposinf(work).sum().to(work.dtype),
                torch.isneginf(work).sum().to(work.dtype),
                (work == 0).sum().to(work.dtype),
                (exact_nonfinite if exact_nonfinite is not None else (~finite).sum()).to(work.dtype),
            ]
        ),
        hist,
    ]
    if block is not None:
        parts.append(block.reshape(-1).to(work.dtype))
    host = torch.cat([p.to(torch.float64) for p in parts]).cpu().tolist()

    n_fin, lo_v, hi_v, mean_v, std_v, norm_v, nan, posinf, neginf, zeros, nonfinite = host[:N_SCALARS]
    has_finite = n_fin > 0
    stats = TensorStats(
        count=numel,
        finite=int(n_fin),
        min=lo_v if has_finite else None,
        max=hi_v if has_finite else None,
        mean=mean_v if has_finite else None,
        std=std_v if n_fin > 1 else None,
        absmax=max(abs(lo_v), abs(hi_v)) if has_finite else None,
        norm=norm_v if has_finite else None,
        nan=int(nan),
        posinf=int(posinf),
        neginf=int(neginf),
        zeros=int(zeros),
        nonfinite=int(nonfinite),
        hist=[int(v) for v in host[N_SCALARS : N_SCALARS + HIST_BINS]] if has_finite else [],
        hist_range=[lo_v, hi_v] if has_finite else None,
        approx=approx,
        sampled=flat.numel() if approx else numel,
        of=stats_of,
    )
    values = host[N_SCALARS + HIST_BINS :] if block is not None else None
    return stats, values, block_shape


# Dtypes whose values need float64 on the host to stay exact.
_WIDE = (torch.float64, torch.int64, torch.int32, torch.uint8, torch.int16, torch.int8)


def _leading_block(t: torch.Tensor, budget: int) -> tuple[torch.Tensor, list[int]]:
    """The block t[:k0, :k1, ...] with the product of k at most `budget`.

    The last two dimensions get most of the budget (they form the 2-D grid in the
    values pane); leading dimensions keep as many indices as what is left allows.
    """
    shape = list(t.shape)
    if t.numel() <= budget:
        return t, shape
    keep = [1] * len(shape)
    remaining = budget
    for dim in reversed(range(len(shape))):
        # Inner dims first: up to 32 columns and 32 rows, then whatever fits.
        cap = 32 if dim >= len(shape) - 2 else shape[dim]
        keep[dim] = max(1, min(shape[dim], cap, remaining))
        remaining = max(1, remaining // keep[dim])
    return t[tuple(slice(0, k) for k in keep)], keep
