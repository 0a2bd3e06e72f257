"""One byte layout for a TensorStats (engine/records/stats_bytes.py): what a lazy summary
keeps once computed and what a packed firing keeps (held.py). Integers stay exact (a count
past 2^53), None and infinities come back as they were, and a TensorStats the layout cannot
give back as it was (a NaN statistic, an integer where a float is, as a file may have it)
is said so (`exact_bytes` None: held.py keeps that record as it is)."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from hooktui.engine.records import held
from hooktui.engine.records.records import Event, TensorRecord, TensorStats
from hooktui.engine.records.stats_bytes import counts_of, exact_bytes, pack_stats, unpack_stats
from hooktui.engine.records.trace_file import event_json
from hooktui.engine.run.session import Session

BIG = (1 << 53) + 1  # the first integer float64 cannot hold
INT64_MAX = (1 << 63) - 1

CASES = {
    "huge counts": TensorStats(count=INT64_MAX, finite=BIG, min=-1.5, max=2.0, mean=0.25, std=1.0, absmax=2.0,
                               norm=1e300, nan=BIG + 2, posinf=(1 << 62) + 1, neginf=3, zeros=BIG + 4,
                               nonfinite=BIG + 2 + (1 << 62) + 1 + 3, hist=[(1 << 32) - 1, 0, 7], hist_range=[-1.5, 2.0],
                               approx=True, sampled=BIG + 6, hist_sampled=BIG + 8),
    "infinite statistics": TensorStats(count=5, finite=3, min=-math.inf, max=math.inf, mean=0.0, std=math.inf,
                                       absmax=math.inf, norm=math.inf, nan=1, posinf=1, nonfinite=2, hist=[1, 2],
                                       hist_range=[-math.inf, math.inf]),
    "signed zero and subnormal": TensorStats(count=2, finite=2, min=-0.0, max=5e-324, mean=2.5e-324, std=None,
                                             absmax=5e-324, norm=5e-324, zeros=1, hist=[1, 1], hist_range=[-0.0, 5e-324]),
    "None statistics, empty histogram": TensorStats(count=0),
    "every value non-finite": TensorStats(count=3, finite=0, nan=1, posinf=1, neginf=1, nonfinite=3),
    "of |z|": TensorStats(count=16, finite=16, min=0.0, max=3.0, mean=1.0, std=0.5, absmax=3.0, norm=5.0,
                          hist=[4] * 4, hist_range=[0.0, 3.0], approx=True, sampled=8, of="abs", hist_sampled=8),
}


def _fields(s: TensorStats) -> list[tuple[type, object]]:
    """Each field with its type; floats by their bits (-0.0 is not 0.0 here)."""
    out = []
    for name in TensorStats.__slots__:
        value = getattr(s, name)
        out.append((type(value), value.hex() if type(value) is float else
                    [(type(v), v.hex() if type(v) is float else v) for v in value] if type(value) is list else value))
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_the_one_layout_gives_back_every_field_as_it_was(name):
    stats = CASES[name]
    packed = pack_stats(stats)
    assert exact_bytes(stats) == packed
    back = unpack_stats(packed)
    assert back == stats and _fields(back) == _fields(stats)
    assert counts_of(packed) == (stats.nan, stats.posinf, stats.neginf)


def test_what_the_layout_cannot_give_back_is_said_so():
    for stats in (TensorStats(count=2, finite=2, min=0, max=1.0),  # a file's integer where a float is
                  TensorStats(count=2, finite=2, mean=math.nan),  # NaN is how the layout says None
                  TensorStats(count=1 << 63),  # past int64
                  TensorStats(count=1, hist=[1 << 32], hist_range=[0.0, 1.0]),
                  TensorStats(count=1, of="phase")):
        assert exact_bytes(stats) is None


def test_a_packed_store_reads_back_what_the_layout_cannot_hold_as_it_was(monkeypatch):
    monkeypatch.setattr(held, "PACK_AFTER", 0)
    odd = [*CASES.values(), TensorStats(count=2, finite=2, min=0, max=1.0), TensorStats(count=2, finite=2, mean=math.nan)]

    def firings():
        return [Event(index=i, phase="forward", hook="forward", module="m", module_type="M", call=i,
                      tensors=[TensorRecord("output", [2], "float32", "cpu", stats=odd[i % len(odd)])])
                for i in range(3 * held.CHUNK)]

    held.run_started()
    try:
        store = held.HeldEvents(firings())
    finally:
        held.run_ended()
    assert store.packed == len(store)
    read, plain = list(store), firings()
    for got, made in zip(read, plain, strict=True):
        assert _fields(got.tensors[0].stats) == _fields(made.tensors[0].stats)


class _Complex(nn.Module):
    """Complex values out (statistics of |z|)."""

    def forward(self, x):
        return torch.polar(x.abs() + 1, x)


class _NonFinite(nn.Module):
    """+Inf, -Inf and NaN in the output."""

    def forward(self, z):
        r = torch.view_as_real(z).sum(-1)
        return torch.cat([(r[:, :1].abs() + 1) / 0.0, -(r[:, 1:2].abs() + 1) / 0.0, r[:, 2:3] * math.nan, r[:, 3:]], dim=1)


def test_a_run_s_packed_firings_read_back_as_the_records_it_made(monkeypatch):
    """Lazy summaries packed as their own bytes, complex and non-finite values included."""
    monkeypatch.setattr(held, "PACK_AFTER", 0)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), _Complex(), _NonFinite(), *[nn.Sequential(nn.Linear(8, 8), nn.Tanh()) for _ in range(3)])
    made = []
    trace = Session(model, torch.randn(3, 8), pause=False, legacy=True).run(on_event=made.append)
    assert trace.events.packed >= held.CHUNK
    read = list(trace.events)
    assert [event_json(e) for e in read] == [event_json(e) for e in made]
    stats = [t.stats for e in read[:trace.events.packed] for t in e.tensors if t.stats is not None]
    assert any(s.of == "abs" for s in stats) and any(s.nan for s in stats) and any(s.posinf and s.neginf for s in stats)
