"""Without a terminal (nohup, a batch job, CI, a notebook) or on a rank that does not own the
app, `hooktui.debug` records the step to a trace file, says its name on stderr, and returns;
`hooktui view` opens the file."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

import pytest
import torch
from torch.nn import functional as F

import hooktui
import hooktui.loop.where
from hooktui.engine.records.trace_file import read_trace_file
from hooktui.ui.app import HooktuiApp
from loop_helpers import assert_same_state, batch, continue_then_quit, net_and_twin, use_pilot, wait_for


def _no_terminal(monkeypatch):
    monkeypatch.setattr(hooktui.loop.where, "terminal_attached", lambda: False)


def test_recorded_to_a_file_that_view_opens(monkeypatch, tmp_path, capsys):
    _no_terminal(monkeypatch)
    net, twin = net_and_twin()
    x, y = batch()
    torch.manual_seed(5)
    hooktui.debug(net, lambda: F.cross_entropy(net(x), y))
    torch.manual_seed(5)
    hooktui.debug(net, lambda: F.cross_entropy(net(x), y))  # a second step: a second file
    for _ in range(2):
        torch.manual_seed(5)
        F.cross_entropy(twin(x), y).backward()
    assert_same_state(net, twin)

    err = capsys.readouterr().err
    names = re.findall(r"recorded the step \(\d+ firings\) to (\S+); open it with: hooktui view (\S+)", err)
    assert len(names) == 2 and all(a == b for a, b in names)
    paths = [Path(a) for a, _ in names]
    assert all(p.parent == tmp_path for p in paths)  # HOOKTUI_DIR
    numbers = [int(re.fullmatch(rf"hooktui-{os.getpid()}-(\d+)\.jsonl", p.name).group(1)) for p in paths]
    assert numbers[1] == numbers[0] + 1
    assert sorted(tmp_path.iterdir()) == paths
    loaded = read_trace_file(paths[0])
    hooks = [(e.phase, e.hook, e.module) for e in loaded.events]
    assert hooks[0] == ("forward", "forward_pre", "") and ("backward", "param_grad", "fc1") in hooks
    assert "hooktui.debug at test_debug_record.py" in loaded.info.model

    async def view():
        app = HooktuiApp(recorded=(loaded.info, loaded.events), sources=loaded.sources, show_timings=False)
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            await wait_for(pilot, lambda: len(app.history) == len(loaded.events), "the recorded firings")
            await pilot.press("G")
            assert app.current.index == loaded.events[-1].index and app.state == "replay"

    asyncio.run(view())


def test_a_bad_hooktui_dir_is_refused_before_the_step_runs(monkeypatch, tmp_path):
    _no_terminal(monkeypatch)
    monkeypatch.setenv("HOOKTUI_DIR", str(tmp_path / "missing"))
    net, _ = net_and_twin()
    ran = []
    with pytest.raises(ValueError, match="HOOKTUI_DIR=.*missing.*no such folder"):
        hooktui.debug(net, lambda: ran.append(1))
    assert ran == []


def test_a_hooktui_dir_that_is_a_file_is_said_to_be_no_folder(monkeypatch, tmp_path):
    _no_terminal(monkeypatch)
    monkeypatch.setenv("HOOKTUI_DIR", "/etc/passwd")
    net, _ = net_and_twin()
    with pytest.raises(ValueError, match="HOOKTUI_DIR='/etc/passwd': not a folder"):
        hooktui.debug(net, lambda: None)


def test_a_300_digit_rank_still_records(monkeypatch, tmp_path, capsys):
    """The rank goes in the file name, cut short: never `OSError: File name too long`."""
    _no_terminal(monkeypatch)
    monkeypatch.setenv("RANK", "7" * 300)
    net, _ = net_and_twin()
    x, y = batch()
    hooktui.debug(net, lambda: F.cross_entropy(net(x), y))
    (path,) = tmp_path.glob("hooktui-*.jsonl")
    assert len(path.name) < 100 and "rank77777" in path.name


@pytest.mark.parametrize("env,opens", [({"RANK": "3", "HOOKTUI_RANK": "3"}, True), ({"RANK": "3"}, False), ({"LOCAL_RANK": "0"}, True)])
def test_under_torchrun_only_hooktui_rank_opens_the_app_and_every_rank_records(monkeypatch, tmp_path, env, opens):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    opened = []
    use_pilot(monkeypatch, continue_then_quit, opened)  # a terminal is attached
    net, _ = net_and_twin()
    x, y = batch()
    hooktui.debug(net, lambda: F.cross_entropy(net(x), y))
    assert bool(opened) == opens
    rank = env.get("RANK", env.get("LOCAL_RANK"))
    files = [p.name for p in tmp_path.iterdir()]
    assert files == [f"hooktui-{os.getpid()}-{files[0].split('-')[2]}-rank{rank}.jsonl"]
    assert read_trace_file(tmp_path / files[0]).events


def test_a_bad_hooktui_rank_says_so(monkeypatch):
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("HOOKTUI_RANK", "first")
    net, _ = net_and_twin()
    with pytest.raises(ValueError, match="HOOKTUI_RANK='first': expected a whole number"):
        hooktui.debug(net, lambda: net(batch()[0]).sum())


def test_a_step_debugged_inside_an_except_handler_records_every_firing(monkeypatch, capsys):
    # sys.exc_info() is set in a handler: it must not read as "this module's forward raised".
    _no_terminal(monkeypatch)
    net, _ = net_and_twin()
    x, y = batch()
    hooktui.debug(net, lambda: F.cross_entropy(net(x), y))
    try:
        raise RuntimeError("the step that just failed")
    except RuntimeError:
        hooktui.debug(net, lambda: F.cross_entropy(net(x), y))
    paths = re.findall(r"to (\S+); open it with", capsys.readouterr().err)
    plain, handled = [[(e.hook, e.module) for e in read_trace_file(Path(p)).events] for p in paths]
    assert handled == plain and ("backward", "fc1") in handled
