"""HOOKTUI_DEVICE_PATH=1 sends CPU tensors down the CUDA path (engine/summaries/lazy_stats.py's
DeviceSnapshot: nothing read back at firing time, one host copy per pause, statistics
resolved on first read). `make test` runs the parity, app, hunt, guard and debug tests a
second time with it set; these tests show that the switch reaches every entry point and
that the path records what the host path records."""

import threading
import time
from pathlib import Path

import pytest
import torch
from torch import nn

import hooktui
from hooktui.cli import main
from hooktui.commands.common import session_for
from hooktui.engine.summaries import lazy_stats
from hooktui.engine.run.loader import load_target
from hooktui.engine.records.records import LazyTensorRecord
from hooktui.engine.run.session import Session, record
from hooktui.engine.summaries.stats import DEVICE_PATH_ENV, StatsOptions, describe
from hooktui.engine.records.trace_file import write_trace

SAMPLES = Path(__file__).resolve().parents[2] / "sample_models"


def _summaries(events):
    return [t._summary for e in events for t in e.tensors if isinstance(t, LazyTensorRecord)]


def _model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 2))


def test_the_switch_decides_the_default_options(monkeypatch):
    monkeypatch.delenv(DEVICE_PATH_ENV, raising=False)
    assert StatsOptions().defer_host is False
    assert isinstance(describe("x", torch.ones(3))._summary, lazy_stats.HostSnapshot)
    monkeypatch.setenv(DEVICE_PATH_ENV, "0")
    assert StatsOptions().defer_host is False
    monkeypatch.setenv(DEVICE_PATH_ENV, "1")
    assert StatsOptions().defer_host is True
    assert isinstance(describe("x", torch.ones(3))._summary, lazy_stats.DeviceSnapshot)
    assert StatsOptions(max_values=8).defer_host is True  # any options made without saying
    assert StatsOptions(defer_host=False).defer_host is False  # said: kept


@pytest.mark.parametrize("on", [False, True], ids=["host", "device-path"])
def test_every_entry_point_takes_the_path_the_switch_says(monkeypatch, tmp_path, on):
    """record, the commands' sessions (trace, the app, serve), hooktui.guard and hooktui.debug:
    only the device path copies to the host in batches (`host_transfers`)."""
    if on:
        monkeypatch.setenv(DEVICE_PATH_ENV, "1")
    else:
        monkeypatch.delenv(DEVICE_PATH_ENV, raising=False)
    monkeypatch.setenv("HOOKTUI_DIR", str(tmp_path))
    x = torch.randn(3, 4)
    kind = lazy_stats.DeviceSnapshot if on else lazy_stats.HostSnapshot

    trace = record(_model(), x)
    assert trace.state == "finished" and {type(s) for s in _summaries(trace.events)} == {kind}

    session = session_for(load_target(SAMPLES / "seed.py"), pause=False)
    session.run()
    assert {type(s) for s in _summaries(session.events)} == {kind}

    for run in (_guarded_step, _debugged_step):
        before = lazy_stats.host_transfers
        run(_model(), x)
        assert (lazy_stats.host_transfers > before) == on, run.__name__


def _guarded_step(model, x):
    with hooktui.guard(model):
        model(x).sum().backward()


def _debugged_step(model, x):
    hooktui.debug(model, lambda: model(x).sum())  # no terminal: recorded to HOOKTUI_DIR


def test_one_host_copy_per_pause_and_none_for_reading(monkeypatch):
    monkeypatch.setenv(DEVICE_PATH_ENV, "1")
    session = Session(_model(), torch.randn(3, 4))  # pauses at every firing
    at_pause = []
    session_thread = threading.Thread(
        target=session.run, kwargs={"on_state": lambda s: s == "paused" and at_pause.append(lazy_stats.host_transfers)})
    before = lazy_stats.host_transfers
    seen, new_at_pause = set(), []
    session_thread.start()
    try:
        for pause in range(1, 9):  # the forward firings
            deadline = time.monotonic() + 30
            while len(at_pause) < pause:
                assert time.monotonic() < deadline, "no pause"
                time.sleep(0.005)
            summaries = _summaries(session.events)
            # A tensor seen again unchanged (a module's output, the next one's input)
            # shares its summary: nothing new to copy at that pause.
            new_at_pause.append(any(id(s) not in seen for s in summaries))
            seen |= {id(s) for s in summaries}
            for summary in summaries:
                summary.read_stats(), summary.nonfinite_counts()
            assert lazy_stats.host_transfers == at_pause[-1]  # reading copies nothing more
            assert session.events[-1].phase == "forward"
            session.step()
    finally:
        session.resume()
        session_thread.join(30)
    counts = [before] + at_pause[:8]
    assert [b - a for a, b in zip(counts, counts[1:])] == [int(new) for new in new_at_pause]
    assert sum(new_at_pause) >= 4


@pytest.mark.parametrize("name", ["cnn.py", "rnn.py", "transformer.py", "nan_hunt.py"])
def test_diff_of_a_host_run_and_a_device_path_run_agrees(monkeypatch, tmp_path, capsys, name):
    """What `hooktui diff cpu.jsonl cuda.jsonl` does, with the CUDA run's summaries taken as
    on the GPU; nan_hunt's gradients carry NaN, whose counts must agree too."""
    files = []
    for on in (False, True):
        if on:
            monkeypatch.setenv(DEVICE_PATH_ENV, "1")
        else:
            monkeypatch.delenv(DEVICE_PATH_ENV, raising=False)
        loaded = load_target(SAMPLES / name)
        trace = record(loaded.model, loaded.inputs, loaded.loss_fn)
        kinds = {type(s) for s in _summaries(trace.events)}
        assert kinds == {lazy_stats.DeviceSnapshot if on else lazy_stats.HostSnapshot}
        files.append(tmp_path / f"{'device' if on else 'host'}.jsonl")
        write_trace(files[-1], trace.info, trace.events)
    capsys.readouterr()
    assert main(["diff", str(files[0]), str(files[1])]) == 0, capsys.readouterr().out
    if name == "nan_hunt.py":
        assert main(["diff", str(files[0]), str(files[1]), "--json"]) == 0


def test_device_snapshots_count_against_the_snapshot_budget(monkeypatch):
    """A long run on the GPU keeps the value blocks of its recent firings only, as on the
    CPU: once on the host, the oldest summaries keep their statistics and drop their values."""
    monkeypatch.setattr(lazy_stats, "SNAPSHOT_BUDGET_BYTES", 64 * 1024)
    tensors = [torch.full((32, 32), float(i)) for i in range(40)]
    records = [describe("x", t, StatsOptions(defer_host=True)) for t in tensors]
    before = lazy_stats.host_transfers
    kept = [r.values is not None for r in records]
    assert lazy_stats.host_transfers == before + 1  # all 40 came over in one copy
    assert kept == sorted(kept) and 1 <= sum(kept) < 40  # the oldest dropped, the newest kept
    assert records[-1].values == [39.0] * 1024
    for i, r in enumerate(records):
        assert (r.stats.min, r.stats.max, r.stats.mean, r.stats.count) == (i, i, i, 1024)


def test_a_snapshot_whose_batch_another_thread_flushed_meanwhile_is_still_copied(monkeypatch):
    """The app reads records (and so flushes the batch) while the model runs on: a snapshot
    that picked the batch just before that must not be left out of every copy."""
    real = lazy_stats._batch
    picked = []

    def flushed_meanwhile():
        batch = real()
        if not picked:
            batch.flush()  # what a reader on another thread can do at this very moment
        picked.append(batch)
        return batch

    monkeypatch.setattr(lazy_stats, "_batch", flushed_meanwhile)
    t = torch.tensor([1.0, float("nan"), 3.0, float("-inf")])
    record = describe("x", t, StatsOptions(defer_host=True))
    monkeypatch.undo()
    assert record.nonfinite_counts == (1, 0, 1)
    assert (record.stats.min, record.stats.max, record.values[0]) == (1.0, 3.0, 1.0)
