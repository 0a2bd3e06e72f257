"""Which step `hooktui attach` opens (`--when`, `--break-nonfinite`) and `--record`, which
saves it without pausing: the file holds the whole step, its values those of the script's
own hooks."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from hooktui.attach import wire
from hooktui.attach.client import AttachError, Connection
from hooktui.commands.attach import _record, open_step
from hooktui.engine.records.trace_file import read_trace
from test_attach import WORKER, finished, pid_of, start


def test_record_when_saves_the_step_whose_loss_makes_it_true(tmp_path):
    training = start(tmp_path / "armed")
    connection = Connection(pid_of(tmp_path / "armed", training))
    request = wire.Open(record=True, when="step >= 3 and loss > 0")
    opened, first = open_step(connection, request, on_waiting=(tmp_path / "armed" / "go").touch)
    assert opened.step == 3
    assert _record(connection, opened, first, str(tmp_path / "step.jsonl")) == 0
    finished(training)
    info, events = read_trace(tmp_path / "step.jsonl")
    assert (events[0].hook, events[0].module) == ("forward_pre", "")  # the whole step, from its root's forward
    assert any(e.phase == "backward" for e in events) and "step 3" in info.model
    hooks = json.loads((tmp_path / "armed" / "hook.json").read_text())
    output = next(t for e in events if e.module == "fc1" and e.hook == "forward" for t in e.tensors if t.name == "output")
    assert sum(output.values) == pytest.approx(hooks["output"][3], rel=1e-5, abs=1e-5)


def test_break_nonfinite_opens_the_first_step_with_a_nan_at_that_firing(tmp_path):
    training = start(tmp_path / "armed", "--nan-at-4")
    connection = Connection(pid_of(tmp_path / "armed", training))
    opened, first = open_step(connection, wire.Open(nonfinite=True), on_waiting=(tmp_path / "armed" / "go").touch)
    assert opened.step == 4
    events = list(first)
    while True:
        message = connection.read()
        if isinstance(message, wire.State):
            break
        events.append(message)
    assert message.state == "paused" and message.stop is not None
    stopped = next(e for e in events if e.key == (message.stop.index, message.stop.sub))
    assert stopped.hook == "forward_pre" and "NaN" in message.stop.reason  # the bad input, as it arrives
    connection.send(wire.Quit())
    connection.close()
    finished(training)


def test_run_armed_arms_the_model_the_script_trains(tmp_path):
    """`hooktui run --armed`: no call in the script; the first module it calls with grad that
    has parameters is armed: its root, whose steps are then recorded whole."""
    out = tmp_path / "run"
    out.mkdir()
    training = subprocess.Popen([sys.executable, "-m", "hooktui", "run", "--armed", str(WORKER), str(out), "--no-arm", "--wait"])
    pid = pid_of(out, training)
    deadline = time.monotonic() + 120
    while True:  # armed as step 0's forward starts
        try:
            connection = Connection(pid)
            break
        except AttachError:
            assert time.monotonic() < deadline and training.poll() is None, "the script was never armed"
            time.sleep(0.05)
    opened, first = open_step(connection, wire.Open(record=True), on_waiting=(out / "go").touch)
    assert opened.step == 1
    assert _record(connection, opened, first, str(tmp_path / "step.jsonl")) == 0
    finished(training)
    _, events = read_trace(tmp_path / "step.jsonl")
    assert (events[0].hook, events[0].module, events[0].module_type) == ("forward_pre", "", "Sequential")
    assert {"fc1", "act", "fc2"} <= {e.module for e in events}
