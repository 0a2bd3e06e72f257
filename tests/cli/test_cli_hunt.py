"""`hooktui trace --stop-at-nonfinite` / `--stop-above`: the firings up to the first hit,
where the bad value was born, exit status 3; `--json` ends with a `stopped` record."""

import json

import pytest

from cli_run import SAMPLES, results as wait_for, start_many

_RUNS = start_many(forked=True, commands={  # one interpreter, a fork a run (cli_run.hooktui_forked)
    "table": ("trace", SAMPLES / "nan_hunt.py", "--stop-at-nonfinite"),
    "json": ("trace", SAMPLES / "nan_hunt.py", "--stop-at-nonfinite", "--json"),
    "clean": ("trace", SAMPLES / "cnn.py", "--stop-at-nonfinite"),
    "above": ("trace", SAMPLES / "cnn.py", "--stop-above", "absmax=0.5", "--phase", "backward", "--json"),
    "bad": ("trace", SAMPLES / "cnn.py", "--stop-above", "size=3"),
})


@pytest.fixture(scope="module")
def runs():
    return wait_for(_RUNS)


def test_stop_at_nonfinite_prints_where_it_was_born_and_exits_3(runs):
    run = runs["table"]
    assert run.returncode == 3, run.stderr
    tail = run.stdout.split("\nstopped at #", 1)[1]
    assert "1 NaN in grad_inputs[0]" in tail
    assert "Autograd node SqrtBackward0, in the backward of blocks.2.norm" in tail
    assert "nan_hunt.py:30: rms = torch.sqrt(ms)" in tail or "torch.sqrt(ms)" in tail


def test_json_is_the_same_as_records_with_a_last_stopped_record(runs):
    run = runs["json"]
    assert run.returncode == 3, run.stderr
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    *firings, last = lines
    stopped = last["stopped"]
    assert stopped["index"] == firings[-1]["index"]
    # The last firing printed is the one stopped at, and it is the first with a NaN/Inf.
    def bad(firing):
        return any(t.get("stats") and (t["stats"]["nan"] or t["stats"]["posinf"] or t["stats"]["neginf"]) for t in firing["tensors"])
    assert bad(firings[-1]) and not any(bad(f) for f in firings[:-1])
    assert stopped["born"]["module"] == "blocks.2.norm" and firings[-1]["hook"] == "node"


def test_a_finite_model_runs_to_the_end_with_status_0(runs):
    run = runs["clean"]
    assert run.returncode == 0, run.stderr
    assert "stopped at" not in run.stdout


def test_stop_above_stops_at_the_first_tensor_over_the_bound(runs):
    run = runs["above"]
    assert run.returncode == 3, run.stderr
    *firings, last = [json.loads(line) for line in run.stdout.splitlines()]
    def over(firing):
        return any(t.get("stats") and (t["stats"]["absmax"] or 0) > 0.5 for t in firing["tensors"])
    backward = [f for f in firings if f["phase"] == "backward"]
    assert over(firings[-1]) and not any(over(f) for f in backward[:-1])
    assert "absmax" in last["stopped"]["reason"]


def test_a_bad_bound_is_one_message_and_exit_2(runs):
    run = runs["bad"]
    assert run.returncode == 2
    assert "use norm=NUMBER or absmax=NUMBER" in run.stderr and "Traceback" not in run.stderr
