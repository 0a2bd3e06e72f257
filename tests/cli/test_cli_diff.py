"""`hooktui diff A.jsonl B.jsonl`: exit 0 when the runs agree, 1 when they differ, 2 on bad
input (one message, no traceback); `--json`; record text never reaches the terminal raw.
Run in-process (`cli.main`): diff needs no model and no torch of its own."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from hooktui.cli import main
from hooktui.engine.run.loader import load_target
from hooktui.engine.run.session import record
from hooktui.engine.records.trace_file import read_trace, write_trace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import hostile  # noqa: E402

SAMPLES = Path(__file__).resolve().parents[2] / "sample_models"


def save(path: Path, name: str = "seed.py") -> Path:
    loaded = load_target(SAMPLES / name)
    trace = record(loaded.model, loaded.inputs, loaded.loss_fn)
    write_trace(path, trace.info, trace.events)
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs")
    a = save(folder / "a.jsonl")
    b = save(folder / "b.jsonl")
    # B with fc2's forward output moved by 1% of its magnitude: its (only) value too.
    info, events = read_trace(b)
    position = next(i for i, e in enumerate(events) if e.hook == "forward" and e.module == "fc2")
    output = next(t for t in events[position].tensors if t.name == "output")
    shift = 0.01 * output.stats.absmax
    for name in ("min", "max", "mean"):
        setattr(output.stats, name, getattr(output.stats, name) + shift)
    output.values = [v + shift for v in output.values]
    changed = folder / "changed.jsonl"
    write_trace(changed, info, events)
    return {"a": a, "b": b, "changed": changed, "index": events[position].index}


def diff(capsys, *argv) -> tuple[int, str, str]:
    code = main(["diff", *map(str, argv)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_identical_runs_agree(runs, capsys):
    code, out, err = diff(capsys, runs["a"], runs["b"])
    assert code == 0, out + err
    assert "the runs agree" in out


def test_a_changed_run_differs_at_that_firing(runs, capsys):
    code, out, _ = diff(capsys, runs["a"], runs["changed"])
    assert code == 1
    first = out.split("first difference", 1)[1].splitlines()[1]
    assert first.strip().startswith(f"#{runs['index']} forward forward fc2 call 0")
    code, out, _ = diff(capsys, runs["a"], runs["changed"], "--json")
    assert code == 1
    report = json.loads(out)
    assert report["agree"] is False and report["first_difference"]["index_a"] == runs["index"]
    assert report["first_difference"]["module"] == "fc2"
    fc2 = next(m for m in report["modules"] if m["module"] == "fc2")
    assert fc2["rel"] == pytest.approx(0.01, rel=1e-3)
    # Inside the tolerance: agree.
    code, out, _ = diff(capsys, runs["a"], runs["changed"], "--rtol", "0.02", "--json")
    assert code == 0 and json.loads(out)["agree"] is True


@pytest.mark.parametrize(
    "argv, message",
    [
        (("{a}",), "diff needs two trace files"),
        (("{a}", "{dir}/missing.jsonl"), "missing.jsonl: no such file"),
        (("{a}", "{dir}"), "is a folder"),
        (("{a}", "{dir}/not_a_trace.jsonl"), "not a hooktui trace"),
        (("{a}", "{b}", "--rtol", "-1"), "--rtol -1.0: a tolerance is a finite number"),
        (("{a}", "{b}", "--atol", "nan"), "--atol nan: a tolerance is a finite number"),
    ],
)
def test_bad_input_is_one_message_and_exit_2(runs, capsys, argv, message):
    folder = runs["a"].parent
    (folder / "not_a_trace.jsonl").write_text('{"hello": "world"}\n')
    code, out, err = diff(capsys, *(a.format(a=runs["a"], b=runs["b"], dir=folder) for a in argv))
    assert code == 2
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert out == ""


def test_record_text_is_shown_not_obeyed(tmp_path, capsys):
    a = hostile.write(tmp_path / "a.jsonl")
    info, events = read_trace(a)
    events[1].tensors[0].stats.max += 1.0  # a difference, so every part of the report prints
    b = tmp_path / "b.jsonl"
    write_trace(b, info, events)
    code, out, err = diff(capsys, a, b)
    assert code == 1
    assert "first difference" in out and "\\x1b" in out
    for raw in hostile.RAW:
        assert raw.decode() not in out + err
    code, out, _ = diff(capsys, a, b, "--json")
    assert json.loads(out)["first_difference"]["module"].startswith("fc")
    for raw in hostile.RAW:
        assert raw.decode() not in out


def test_view_against_a_bad_file_is_one_message_and_exit_2(runs, capsys):
    code = main(["view", str(runs["a"]), "--against", str(runs["a"].parent / "missing.jsonl")])
    err = capsys.readouterr().err
    assert code == 2 and "missing.jsonl: no such file" in err and "Traceback" not in err


def test_the_report_says_which_tensors_were_compared_by_statistics_only(runs, capsys, tmp_path):
    """B saved as `trace --values 0` saves it: no values kept."""
    info, events = read_trace(runs["b"])
    numeric = 0
    for event in events:
        for tensor in event.tensors:
            if not tensor.is_missing:
                tensor.values = tensor.values_shape = None
                numeric += 1
    write_trace(tmp_path / "stats-only.jsonl", info, events)
    code, out, _ = diff(capsys, runs["a"], tmp_path / "stats-only.jsonl")
    assert code == 0
    assert f"kept values compared for 0 of {numeric} tensors; the other {numeric} by their statistics only" in out
    code, out, _ = diff(capsys, runs["a"], tmp_path / "stats-only.jsonl", "--json")
    report = json.loads(out)
    assert (report["tensors_compared"], report["values_compared"]) == (numeric, 0)
    code, out, _ = diff(capsys, runs["a"], runs["b"])
    assert "kept values compared" not in out  # every tensor compared value by value


def test_two_unrelated_models_are_called_so(tmp_path, capsys):
    """seed.py against cnn.py aligned a few firings (the root) and said the rest were "only in A":
    the report now warns that they look like different models; the same model does not."""
    seed, cnn = save(tmp_path / "seed.jsonl", "seed.py"), save(tmp_path / "cnn.jsonl", "cnn.py")
    modules = {name: {(n, type(m).__name__) for n, m in load_target(SAMPLES / name).model.named_modules()}
               for name in ("seed.py", "cnn.py")}
    shared, larger = len(modules["seed.py"] & modules["cnn.py"]), max(map(len, modules.values()))
    assert 2 * shared < larger  # plain torch: few modules in common
    code, out, _ = diff(capsys, seed, cnn)
    assert code == 1
    assert f"warning: only {shared} of {larger} modules (name and type) are in both" in out.splitlines()[2], out
    code, out, _ = diff(capsys, "--json", seed, cnn)
    assert "different models" in json.loads(out)["models_differ"]
    code, out, _ = diff(capsys, seed, save(tmp_path / "seed2.jsonl", "seed.py"))
    assert code == 0 and "warning" not in out
    code, out, _ = diff(capsys, "--json", seed, tmp_path / "seed2.jsonl")
    assert json.loads(out)["models_differ"] is None
