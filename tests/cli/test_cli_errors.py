"""Bad input to the command line: one clear message naming the file on stderr, exit
status 2, no Python traceback; `--traceback` adds one. `hooktui view` rejects a bad
trace file before any UI starts."""

import json
import textwrap

import pytest

import tempfile
from pathlib import Path

from cli_run import SAMPLES, hooktui, results as wait_for, start_many

MODEL_FILES = {
    "syntax": "import torch\ndef build_model(:\n    pass\n",
    "import_raises": "import torch\nraise RuntimeError('cannot load the weights')\n",
    "no_model": "import torch\ninputs = torch.ones(1, 3)\n",
    "no_inputs": "import torch\nmodel = torch.nn.Linear(3, 2)\n",
    "wrong_shape": "import torch\nmodel = torch.nn.Sequential(torch.nn.Linear(3, 2))\ninputs = torch.ones(1, 5)\n",
    "bad_loss": textwrap.dedent(
        """
        import torch
        model = torch.nn.Linear(3, 2)
        inputs = torch.ones(1, 3)
        def loss_fn(output):
            return output.sum().item()  # a float, not a tensor
        """
    ),
    "build_raises": "import torch\ndef build_model():\n    raise ValueError('no such checkpoint')\ninputs = torch.ones(1)\n",
    "inputs_raise": "import torch\nmodel = torch.nn.Linear(3, 2)\ndef example_inputs():\n    raise OSError('data.pt missing')\n",
    "not_a_module": "import torch\nmodel = 3\nbuild_model = None\ninputs = torch.ones(1)\n",
    # What torch raises on a GPU when loss_fn makes its target on the CPU (no GPU here:
    # the text is torch's, raised by hand).
    "device_loss": textwrap.dedent(
        """
        import torch
        model = torch.nn.Linear(3, 2)
        inputs = torch.ones(1, 3)
        def loss_fn(output):
            raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices, "
                               "cuda:0 and cpu! (when checking argument for argument target in method "
                               "wrapper_CUDA_nll_loss_forward)")
        """
    ),
    # The same mistake in forward, for real: a tensor on `meta` meets one made on the CPU.
    "device_forward": textwrap.dedent(
        """
        import torch
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(3, 2)
            def forward(self, x):
                return self.fc(x).to("meta") + torch.zeros(1, 2)
        model = Net()
        inputs = torch.ones(1, 3)
        """
    ),
}

GOOD_HEADER = {"format": "hooktui-trace", "version": 1, "info": {"model": "m", "modules": [], "loss": "l"}}
TRACE_FILES = {
    "bad_json": '{"format": "hooktui-trace", "version": 1,\n',
    "not_a_trace": json.dumps({"hello": "world"}) + "\n",
    "empty": "",
    "wrong_event_keys": json.dumps(GOOD_HEADER) + "\n" + json.dumps({"index": 0, "surprise": 1}) + "\n",
    "bad_event_json": json.dumps(GOOD_HEADER) + "\n{not json}\n",
    "wrong_header_keys": json.dumps({**GOOD_HEADER, "info": {"model": "m", "colour": "red"}}) + "\n",
    "wrong_version": json.dumps({**GOOD_HEADER, "version": 99}) + "\n",
}

# case -> (argv, text that must be in the one-line message)
CASES = {
    "missing_file": (("trace", "{tmp}/missing.py"), "no such file"),
    **{name: (("trace", f"{{tmp}}/{name}.py"), hint) for name, hint in {
        "syntax": "syntax error",
        "import_raises": "cannot load the weights",
        "no_model": "no model found",
        "no_inputs": "no inputs found",
        "wrong_shape": "mat1 and mat2",
        "bad_loss": "the loss must be a tensor",
        "build_raises": "no such checkpoint",
        "inputs_raise": "data.pt missing",
        "not_a_module": "no model found",
        "device_loss": "device=output.device",
        "device_forward": "device=x.device",
    }.items()},
    "attr_missing": (("trace", "torch.nn:NoSuchModel", "--input-shape", "1,3"), "no attribute"),
    "module_missing": (("trace", "no_such_pkg_hooktui.models:Net", "--input-shape", "1,3"), "cannot import"),
    "attr_needs_shape": (("trace", "torch.nn:Identity"), "--input-shape"),
    "cuda": (("trace", str(SAMPLES / "seed.py"), "--device", "cuda"), "CUDA"),
    "unknown_device": (("trace", str(SAMPLES / "seed.py"), "--device", "tpu"), "device"),
    "view_missing": (("view", "{tmp}/nope.jsonl"), "no such file"),
    **{f"view_{name}": (("view", f"{{tmp}}/{name}.jsonl"), "") for name in TRACE_FILES},
}
NAMED = {  # what the message names when it is not the file given on the command line
    "attr_missing": "torch.nn:NoSuchModel",
    "module_missing": "no_such_pkg_hooktui.models:Net",
    "attr_needs_shape": "torch.nn:Identity",
}
# The cases the command line must get right, run as `python -m hooktui` runs them: each in a
# process of its own, forked from one interpreter that imported torch once (~2 s a case saved;
# cli_run.hooktui_forked); every case also runs in-process below, with and without --traceback.
SUBPROCESS = [
    "missing_file", "syntax", "import_raises", "no_model", "no_inputs", "wrong_shape", "bad_loss",
    "attr_missing", "module_missing", "cuda", "view_bad_json", "view_not_a_trace", "view_wrong_event_keys",
]


def _argv(case, tmp):
    return tuple(a.replace("{tmp}", str(tmp)) for a in CASES[case][0])


def _write_bad_files() -> Path:
    tmp = Path(_TMP.name)
    for name, text in MODEL_FILES.items():
        (tmp / f"{name}.py").write_text(text)
    for name, text in TRACE_FILES.items():
        (tmp / f"{name}.jsonl").write_text(text)
    return tmp


_TMP = tempfile.TemporaryDirectory(prefix="hooktui-bad-")
BAD = _write_bad_files()
# Started at import (collection): they run while other tests do.
_RUNS = start_many(
    {**{case: _argv(case, BAD) for case in SUBPROCESS}, ("wrong_shape", "tb"): _argv("wrong_shape", BAD) + ("--traceback",)},
    cwd=BAD,
    forked=True,
)


@pytest.fixture(scope="module")
def bad_files():
    return BAD


@pytest.fixture(scope="module")
def results():
    return wait_for(_RUNS), BAD


def _check_message(case, stderr, tmp):
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    message = lines[0]
    assert message.startswith("hooktui: ")
    named = NAMED.get(case, _argv(case, tmp)[1])
    assert named in message, message
    assert CASES[case][1] in message, message
    return message


@pytest.mark.parametrize("case", SUBPROCESS)
def test_one_clear_message_and_exit_2(results, case):
    runs, tmp = results
    result = runs[case]
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stdout
    _check_message(case, result.stderr, tmp)


def test_traceback_flag_in_a_real_process(results):
    runs, _ = results
    result = runs[("wrong_shape", "tb")]
    assert result.returncode == 2
    assert result.stderr.count("Traceback (most recent call last)") == 1, result.stderr
    assert "linear.py" in result.stderr and "mat1 and mat2" in result.stderr  # where the model raised
    assert result.stderr.strip().splitlines()[-1] == runs["wrong_shape"].stderr.strip()


@pytest.mark.parametrize("case", CASES)
def test_in_process_with_and_without_traceback(bad_files, case, capsys, monkeypatch):
    from hooktui.cli import main

    monkeypatch.chdir(bad_files)
    assert main(list(_argv(case, bad_files))) == 2
    out, err = capsys.readouterr()
    message = _check_message(case, err, bad_files)
    assert main(list(_argv(case, bad_files)) + ["--traceback"]) == 2
    out, err = capsys.readouterr()
    assert "Traceback (most recent call last)" in err
    assert err.strip().splitlines()[-1] == message


def test_wrong_shape_names_the_module(results):
    message = results[0]["wrong_shape"].stderr
    assert "module '0' (Linear)" in message and "forward" in message


def test_view_fails_before_any_ui(results):
    # The message comes from reading the file; no UI module was reached (an error there
    # would not be one line on stderr with exit status 2).
    for case in SUBPROCESS:
        if case.startswith("view_"):
            result = results[0][case]
            assert result.stdout == "" and "\x1b[" not in result.stderr
    assert ":2:" in results[0]["view_wrong_event_keys"].stderr and "surprise" in results[0]["view_wrong_event_keys"].stderr


def test_no_terminal_exits_2_at_once_pointing_to_trace(tmp_path):
    """`setsid hooktui seed.py </dev/null >log` used to write escape codes into the log and
    never end (issue 25.2). stdin is /dev/null and stdout a pipe here."""
    result = hooktui(SAMPLES / "seed.py")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"hooktui: the debugger needs a terminal (standard input and output are not one here): "
        f"`hooktui trace {SAMPLES / 'seed.py'}` prints the firings instead"]
    assert "\x1b" not in result.stdout + result.stderr
    saved = tmp_path / "t.jsonl"
    assert hooktui("trace", SAMPLES / "seed.py", "--save", saved).returncode == 0
    result = hooktui("view", saved)
    assert result.returncode == 2 and "needs a terminal" in result.stderr and "\x1b" not in result.stdout


@pytest.mark.parametrize("argv, words", [
    (["sample_models/cnn.py", "--json"], "--json goes with trace and diff"),
    (["view", "t.jsonl", "--save", "x.jsonl"], "--save goes with trace"),
    (["trace", "sample_models/seed.py", "--rtol", "3"], "--rtol and --atol go with diff"),
])
def test_an_option_the_command_would_ignore_is_refused(argv, words, capsys):
    from hooktui.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert words in capsys.readouterr().err


def test_version_names_hooktui_torch_and_python(capsys):
    import sys

    import torch

    import hooktui
    from hooktui.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"hooktui {hooktui.__version__} (torch {torch.__version__.split('+')[0]}")
    assert f"Python {sys.version.split()[0]}" in out


@pytest.mark.parametrize("name, words", [("notes.txt", "not a model file"), ("run.jsonl", "a trace file, not a model: hooktui view")])
def test_a_file_that_is_not_python_is_not_run_as_python(tmp_path, name, words, capfd):
    from hooktui.cli import main

    path = tmp_path / name
    path.write_text("import os\nos.system('echo ran')\n")  # valid Python: it must not run
    assert main(["trace", str(path)]) == 2
    captured = capfd.readouterr()  # the file descriptors: os.system's echo would write there
    assert words in captured.err and "ran" not in captured.out


@pytest.mark.parametrize("flags", [["--break-if", "True"], ["--break-nonfinite"], ["--stop-above", "norm=3"]], ids=["if", "nonfinite", "above"])
@pytest.mark.parametrize("command", ["view", "diff"])
def test_value_breakpoints_are_refused_by_view_and_diff(tmp_path, command, flags, capsys):
    """A recorded run has nothing to stop: said, not silently ignored (issue 24)."""
    from hooktui.cli import main

    files = ["a.jsonl", "b.jsonl"] if command == "diff" else ["a.jsonl"]
    with pytest.raises(SystemExit) as exit_info:
        main([command, *files, *flags])
    assert exit_info.value.code == 2
    assert f"{command} reads a recorded run" in capsys.readouterr().err
