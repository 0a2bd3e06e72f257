"""`hooktui trace FILE` on every sample model: the table, `--json` lines with exactly
the documented keys, and `--save` files that `read_trace` gives back unchanged."""

import json
import math
import tempfile
from pathlib import Path

import numpy as np
import pytest

import hooktui
from cli_run import SAMPLES, results as wait_for, start_many
from hooktui.engine.run.loader import load_target
from hooktui.engine.records.trace_file import event_json, read_trace, write_trace

NAMES = sorted(p.stem for p in SAMPLES.glob("*.py"))
EVENT_KEYS = {"index", "phase", "hook", "module", "module_type", "call", "grad_fn", "tensors"}
TENSOR_KEYS = {"name", "shape", "dtype", "device", "stats"}
TABLE = ["seed", "nan"]  # the readable table (every sample runs with --json below)


_OUT = tempfile.TemporaryDirectory(prefix="hooktui-traces-")
_COMMANDS = {}
for _name in NAMES:
    if _name in TABLE:
        _COMMANDS[(_name, "table")] = ("trace", SAMPLES / f"{_name}.py")
    _COMMANDS[(_name, "json")] = ("trace", SAMPLES / f"{_name}.py", "--json", "--save", Path(_OUT.name) / f"{_name}.jsonl")
# Fewer values kept (--values): on the cnn sample, whose tensors are larger than the default block.
_COMMANDS[("cnn", "values0")] = ("trace", SAMPLES / "cnn.py", "--json", "--values", "0", "--save", Path(_OUT.name) / "cnn-values0.jsonl")
_COMMANDS[("cnn", "values16")] = ("trace", SAMPLES / "cnn.py", "--json", "--values", "16")
_COMMANDS[("cnn", "values-1")] = ("trace", SAMPLES / "cnn.py", "--values=-1")
_COMMANDS[("cnn", "open-values")] = ("open", SAMPLES / "cnn.py", "--values", "3")
# Started at import (collection): they run while other tests do.
_RUNS = start_many(_COMMANDS, forked=True)  # one interpreter, a fork a run (cli_run.hooktui_forked)


@pytest.fixture(scope="module")
def runs():
    return wait_for(_RUNS), Path(_OUT.name)


def _normalise(value, drop=()):
    """NaN != NaN: compare with NaN spelt out; leave out keys in `drop`."""
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, dict):
        return {k: _normalise(v, drop) for k, v in value.items() if k not in drop}
    if isinstance(value, list):
        return [_normalise(v, drop) for v in value]
    return value


@pytest.mark.parametrize("name", TABLE)
def test_table(runs, name):
    result = runs[0][(name, "table")]
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"# {SAMPLES / name}.py") or name in lines[0]
    rows = [line for line in lines if line[:4].strip().isdigit()]
    events = _as_printed(name)
    assert len(rows) == len(events)
    for row, event in zip(rows, events):
        assert row.split()[:3] == [str(event.index), event.phase, event.hook]
    if name == "nan":
        assert "NaN!" in result.stdout and "Inf!" in result.stdout


def _as_printed(name):
    """The events `trace` prints without --legacy: legacy firings are recorded (so every firing
    has the app's number) and left out."""
    trace = hooktui.record(*_loaded(name), legacy=True)
    return [e for e in trace.events if e.hook != "legacy_backward"]


def _loaded(name):
    loaded = load_target(SAMPLES / f"{name}.py")
    return loaded.model, loaded.inputs, loaded.loss_fn


@pytest.mark.parametrize("name", NAMES)
def test_json_lines_have_the_documented_keys(runs, name):
    result = runs[0][(name, "json")]
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines, "no output"
    events = _as_printed(name)
    assert len(lines) == len(events)
    for line, event in zip(lines, events):
        data = json.loads(line)  # strict JSON: NaN / Infinity would not parse as such
        assert EVENT_KEYS <= set(data)  # the documented keys, spelt exactly; the full record may add more
        assert (data["index"], data["phase"], data["hook"], data["module"], data["call"], data["grad_fn"]) == (
            event.index, event.phase, event.hook, event.module, event.call, event.grad_fn,
        )
        assert data["module_type"] == event.module_type
        for tensor, record in zip(data["tensors"], event.tensors, strict=True):
            assert TENSOR_KEYS <= set(tensor)
            assert tensor["shape"] is None or (isinstance(tensor["shape"], list) and all(isinstance(n, int) for n in tensor["shape"]))
            assert tensor["shape"] == record.shape and tensor["name"] == record.name
            if tensor["shape"] is None:
                assert tensor["stats"] is None
            else:
                assert tensor["dtype"] and tensor["device"] == "cpu"
                assert tensor["stats"]["count"] == math.prod(tensor["shape"])


def test_json_flags_nan_in_backward_of_the_nan_sample(runs):
    lines = [json.loads(line) for line in runs[0][("nan", "json")].stdout.splitlines()]
    bad = [d for d in lines if any(t["stats"] and t["stats"]["nan"] for t in d["tensors"])]
    assert bad and all(d["phase"] == "backward" for d in bad)
    assert (bad[0]["module"], bad[0]["hook"]) == ("sq_dist", "backward")
    inf = [d for d in lines if any(t["stats"] and (t["stats"]["posinf"] or t["stats"]["neginf"]) for t in d["tensors"])]
    assert (inf[0]["module"], inf[0]["hook"]) == ("sqrt", "backward")


@pytest.mark.parametrize("name", NAMES)
def test_save_round_trips(runs, name):
    results, out = runs
    assert results[(name, "json")].returncode == 0
    info, events = read_trace(out / f"{name}.jsonl")
    loaded = load_target(SAMPLES / f"{name}.py")
    trace = hooktui.record(loaded.model, loaded.inputs, loaded.loss_fn, legacy=True)
    expected = [e for e in trace.events if e.hook != "legacy_backward"]
    assert info.model == str(SAMPLES / f"{name}.py")
    assert [m.name for m in info.modules] == [m.name for m in trace.info.modules]
    assert len(events) == len(expected)
    # Autograd sequence numbers count every node the process made: the subprocess's differ.
    for got, want in zip(events, expected):
        assert _normalise(got.to_dict(), {"seq_nr"}) == _normalise(want.to_dict(), {"seq_nr"})
    # The saved file and the --json lines come from the same run.
    lines = [json.loads(line) for line in results[(name, "json")].stdout.splitlines()]
    assert [(d["index"], d["hook"], d["module"], [t["shape"] for t in d["tensors"]]) for d in lines] == [
        (e.index, e.hook, e.module, [t.shape for t in e.tensors]) for e in events
    ]


@pytest.mark.parametrize("name", NAMES)
def test_write_then_read_in_process(tmp_path, name):
    loaded = load_target(SAMPLES / f"{name}.py")
    trace = hooktui.record(loaded.model, loaded.inputs, loaded.loss_fn)
    path = tmp_path / "t.jsonl"
    write_trace(path, trace.info, trace.events)
    info, events = read_trace(path)
    assert info.to_dict() == trace.info.to_dict()
    assert [_normalise(e.to_dict()) for e in events] == [_normalise(e.to_dict()) for e in trace.events]
    # Strict JSON on every line.
    for line in path.read_text().splitlines():
        json.loads(line, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    assert [event_json(e) for e in events] == [event_json(e) for e in trace.events]


def test_package_module_attribute_with_input_shape(tmp_path):
    """`package.module:attribute` names an instance, a class or a factory; --input-shape
    gives it one seeded random input."""
    package = tmp_path / "hooktui_testpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "models.py").write_text(
        "import torch\nfrom torch import nn\n"
        "net = nn.Linear(3, 2)\n"
        "def make():\n    torch.manual_seed(0)\n    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))\n"
    )
    from cli_run import hooktui as run_cli

    for target, modules in (("hooktui_testpkg.models:net", {""}), ("hooktui_testpkg.models:make", {"", "0", "1", "2"})):
        result = run_cli("trace", target, "--input-shape", "5,3", "--json", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        events = [json.loads(line) for line in result.stdout.splitlines()]
        assert {e["module"] for e in events if e["hook"] == "forward"} == modules
        first = events[0]["tensors"][0]
        assert first["name"] == "args[0]" and first["shape"] == [5, 3]
        assert any(e["hook"] == "backward" for e in events)


def test_no_model_means_the_stack_overflow_model():
    from cli_run import hooktui as run_cli

    result = run_cli("trace", "--json")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(e["module"], e["module_type"]) for e in events if e["hook"] == "forward"] == [
        ("fc1", "Linear"),
        ("fc2", "Linear"),
        ("", "Model"),
    ]
    first = events[0]["tensors"][0]
    assert first["shape"] == [1, 1, 10] and first["stats"]["min"] == 0 and first["stats"]["max"] == 9  # arange(10)


def _tensors(result) -> list[dict]:
    assert result.returncode == 0, result.stderr
    return [t for line in result.stdout.splitlines() for t in json.loads(line)["tensors"]]


def test_values_0_keeps_statistics_only(runs):
    """`--values 0`: no value anywhere, in the JSON or the saved file; every statistic as
    in the run that kept values (the same seeded run)."""
    results, out = runs
    full, bare = _tensors(results[("cnn", "json")]), _tensors(results[("cnn", "values0")])
    assert len(full) == len(bare) and any(t["values"] for t in full)
    for with_values, without in zip(full, bare):
        assert without["values"] is None and without["values_shape"] is None
        assert _normalise(without["stats"]) == _normalise(with_values["stats"])
    _, saved = read_trace(out / "cnn-values0.jsonl")
    kept = [t for e in saved for t in e.tensors if not t.is_missing]
    assert kept and all(t.values is None and t.stats is not None for t in kept)


def test_values_n_keeps_a_smaller_leading_block(runs):
    """`--values 16`: at most 16 values per tensor, the leading block of the tensor: the
    same numbers as the corner of the default 1,024-value block."""
    results, _ = runs
    full, small = _tensors(results[("cnn", "json")]), _tensors(results[("cnn", "values16")])
    compared = 0
    for big, little in zip(full, small, strict=True):
        if little["values"] is None:
            assert big["values"] is None
            continue
        shape = little["values_shape"]
        assert len(little["values"]) == math.prod(shape) <= 16
        assert _normalise(little["stats"]) == _normalise(big["stats"])
        if all(k <= b for k, b in zip(shape, big["values_shape"])):
            corner = np.asarray(big["values"], dtype=float).reshape(big["values_shape"])[tuple(slice(0, k) for k in shape)]
            assert little["values"] == corner.reshape(-1).tolist()
            compared += 1
    assert compared > 10


def test_values_is_checked(runs):
    results, _ = runs
    bad = results[("cnn", "values-1")]
    assert bad.returncode == 2 and "bad count '-1'" in bad.stderr and "Traceback" not in bad.stderr
    elsewhere = results[("cnn", "open-values")]
    assert elsewhere.returncode == 2 and "--values goes with trace" in elsewhere.stderr


def test_the_cli_default_is_the_engines():
    from hooktui.cli import DEFAULT_VALUES
    from hooktui.engine.summaries.stats import StatsOptions

    assert DEFAULT_VALUES == StatsOptions().max_values
