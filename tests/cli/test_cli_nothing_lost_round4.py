"""Nothing lost, round 4 (issue 35): a closed stdout or stderr, hostile file names and
contents (escape sequences, lone surrogates, Unicode digits), a header as large as hooktui
writes for 200,000 modules, SIGTERM while saving, a Pool over a function of the model file.
Every refusal is one line and a documented exit status; nothing reaches the terminal as a
control character."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from cli_run import ROOT, SAMPLES

SEED = SAMPLES / "seed.py"
OLD = b'{"an": "old file, to be kept"}\n'
TITLE = "x\x1b]0;PWNED\x07.jsonl"  # sets the terminal's title where printed raw
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _env() -> dict:
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}


def _hooktui(*args, redirect: str = "", cwd=ROOT) -> subprocess.CompletedProcess:
    """`python -m hooktui ARGS` through bash, with `redirect` (`>&-`, `2>&-`) as typed."""
    return subprocess.run(["bash", "-c", f'exec "$@" {redirect}', "bash", sys.executable, "-m", "hooktui", *map(str, args)],
                          cwd=cwd, env=_env(), capture_output=True, timeout=180, stdin=subprocess.DEVNULL)


def _one_clean_line(result: subprocess.CompletedProcess) -> str:
    """The only line of stderr, after checking that nothing in the output is a control character."""
    out, err = result.stdout.decode("utf-8"), result.stderr.decode("utf-8")
    assert not CONTROL.search(out.replace("\n", "")), out
    assert not CONTROL.search(err.replace("\n", "")), err
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A trace saved by hooktui itself."""
    path = tmp_path_factory.mktemp("saved") / "seed.jsonl"
    result = _hooktui("trace", SEED, "--save", path, redirect=">/dev/null")
    assert result.returncode == 0, result.stderr
    return path


# -- item 0: closed standard streams ---------------------------------------------------------------------
def test_closed_stdout_keeps_the_saved_file_and_blames_no_model(tmp_path):
    prev = tmp_path / "prev.jsonl"
    prev.write_bytes(OLD)
    result = _hooktui("trace", SEED, "--json", "--save", prev, redirect=">&-")
    line = _one_clean_line(result)
    assert result.returncode == 1, line
    assert line.startswith("hooktui: cannot write to standard output: it is closed"), line
    assert "prev.jsonl was not written" in line and "raised" not in line and "model" not in line, line
    assert prev.read_bytes() == OLD
    assert os.listdir(tmp_path) == ["prev.jsonl"]  # no temporary file left


@pytest.mark.parametrize("args, status", [(("trace", SEED), 1), (("diff", "A", "B"), 2)], ids=["trace", "diff"])
def test_closed_stdout_is_one_line(saved, args, status):
    args = [saved if a in ("A", "B") else a for a in args]
    result = _hooktui(*args, redirect=">&-")
    line = _one_clean_line(result)
    assert result.returncode == status, line
    assert line.startswith("hooktui: cannot write to standard output: it is closed"), line


def test_closed_stderr_still_prints_the_table():
    result = _hooktui("trace", SEED, redirect="2>&-")
    assert result.returncode == 0
    lines = result.stdout.decode().splitlines()
    assert lines[0].startswith("# ") and any(" backward " in line for line in lines), lines


# -- item 1: names and messages with escape sequences -------------------------------------------------------
def test_a_file_name_with_escapes_is_shown_as_text(tmp_path, saved):
    bad = tmp_path / TITLE
    bad.write_text("{}\n")
    good_copy = tmp_path / ("y\x1b[2J\x9b.jsonl")  # a valid trace under a hostile name: its name is printed on stdout
    good_copy.write_bytes(saved.read_bytes())
    folder = tmp_path / "folder\x1b[2J"
    folder.mkdir()
    for args in (("view", bad), ("view", saved, "--against", bad), ("diff", bad, saved), ("diff", saved, bad, saved),
                 ("view", tmp_path / "missing\x1b]52;c;aGk=\x07.jsonl"),
                 ("run", tmp_path / "missing\x1b]52;c;aGk=\x07.py"), ("run", folder)):
        result = _hooktui(*args)
        line = _one_clean_line(result)
        assert result.returncode == 2, (args, line)
        assert "\\x1b" in line, line
    result = _hooktui("diff", saved, saved, "--x\x1b]0;T\x07")  # argparse's usage, then its one line
    err = result.stderr.decode()
    assert result.returncode == 2 and not CONTROL.search(err.replace("\n", "")), err
    assert err.strip().splitlines()[-1].endswith("unrecognized arguments: --x\\x1b]0;T\\x07"), err
    result = _hooktui("diff", good_copy, saved)
    _one_clean_line_or_none(result)
    assert result.returncode == 0 and "y\\x1b[2J\\x9b.jsonl" in result.stdout.decode(), result.stdout


def _one_clean_line_or_none(result: subprocess.CompletedProcess) -> None:
    assert not CONTROL.search(result.stdout.decode().replace("\n", "")), result.stdout
    assert not result.stderr, result.stderr


def test_a_models_message_with_escapes_is_shown_as_text(tmp_path):
    model = tmp_path / "raising.py"
    model.write_text(textwrap.dedent(
        """
        import torch
        from torch import nn

        class Raising(nn.Module):
            def forward(self, x):
                raise ValueError("bad \\x1b]0;PWNED\\x07 value \\x9b31m")

        model = Raising()
        inputs = torch.ones(2)
        """))
    result = _hooktui("trace", model, redirect=">/dev/null")
    line = _one_clean_line(result)
    assert result.returncode == 2 and "bad \\x1b]0;PWNED\\x07 value \\x9b31m" in line, line
    result = _hooktui("trace", model, "--traceback", redirect=">/dev/null")
    err = result.stderr.decode()
    assert result.returncode == 2 and "Traceback" in err and not CONTROL.search(err.replace("\n", "")), err


# -- item 2: contents that crashed ------------------------------------------------------------------------------
def _rewritten(saved, path, header=None, event=None):
    """`saved` with its header and each event passed through the functions given, written as
    JSON with escapes (lone surrogates as "\\udcff", as Python writes them)."""
    lines = saved.read_text().splitlines()
    head = json.loads(lines[0])
    events = [json.loads(line) for line in lines[1:]]
    if header:
        header(head)
    if event:
        for e in events:
            event(e)
    path.write_text("\n".join(json.dumps(x) for x in [head, *events]) + "\n")
    return path


def test_lone_surrogates_in_names_are_shown_as_text(tmp_path, saved):
    def hostile(e):
        if e["module"]:
            e["module"] += "\udcff"
        for t in e["tensors"]:
            t["name"] += "\ud800"

    bad = _rewritten(saved, tmp_path / "surrogates.jsonl", event=hostile)
    for args in (("diff", bad, saved), ("diff", saved, bad), ("diff", bad, bad, saved)):
        result = _hooktui(*args)
        out = result.stdout.decode("utf-8")
        assert result.returncode == 1, result.stderr  # the module names differ
        assert "\\ud800" in out and not result.stderr, result.stderr
        assert not CONTROL.search(out.replace("\n", "")), out


@pytest.mark.parametrize("digit", ["\u00b2", "\u2460", "\u0663"], ids=["superscript-two", "circled-one", "arabic-three"])
def test_a_line_number_in_unicode_digits_is_refused_in_one_line(tmp_path, saved, digit):
    def hostile(head):
        name = next(iter(head["sources"]))
        head["sources"][name][digit] = "x = 1"

    bad = _rewritten(saved, tmp_path / "digits.jsonl", header=hostile)
    for args in (("view", bad), ("view", saved, "--against", bad), ("diff", bad, saved)):
        result = _hooktui(*args)
        line = _one_clean_line(result)
        assert result.returncode == 2, line
        assert "expected a line number" in line and "digits.jsonl:1: header: sources" in line, line


# -- item 3: hooktui reads the header it writes for 200,000 modules ---------------------------------------------
def test_a_header_of_200000_modules_reads_back(tmp_path):
    path = tmp_path / "wide.jsonl"
    script = textwrap.dedent(
        f"""
        from hooktui.engine.records.records import ModuleInfo, TraceInfo
        from hooktui.engine.records.trace_file import write_trace
        modules = [ModuleInfo("", "Wide")] + [ModuleInfo(f"blocks.{{i}}", "Linear", {{"weight": [1, 1], "bias": [1]}})
                                               for i in range(200_000)]
        write_trace({str(path)!r}, TraceInfo("wide.py", modules, "sum"), [])
        """)
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=_env(), check=True, timeout=300)
    with open(path, "rb") as stream:
        assert len(stream.readline()) > 8 << 20  # past the limit of any other line
    result = _hooktui("diff", path, path)
    assert result.returncode == 0, result.stderr
    assert "0 only in A, 0 only in B" in result.stdout.decode()


# -- item 5: SIGTERM while saving; a Pool over the model file's function ------------------------------------
SLOW_WRITER = textwrap.dedent(
    """
    import sys, time
    from hooktui.engine.records import trace_file
    real = trace_file.event_json

    def slow(event):  # the file's writer only: the firings printed on stdout are not slowed
        if not getattr(slow, "said", False):
            slow.said = True
            sys.stderr.write("WRITING\\n")
            sys.stderr.flush()
        time.sleep(0.05)
        return real(event)

    trace_file.event_json = slow
    from hooktui.cli import main
    sys.exit(main(sys.argv[1:]))
    """
)


def test_sigterm_while_saving_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    prev = tmp_path / "prev.jsonl"
    prev.write_bytes(OLD)
    process = subprocess.Popen([sys.executable, "-c", SLOW_WRITER, "trace", str(SEED), "--save", str(prev)], cwd=ROOT, env=_env(),
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seen = b""
    deadline = time.monotonic() + 180
    while b"WRITING" not in seen:
        assert time.monotonic() < deadline and process.poll() is None, seen
        seen += os.read(process.stderr.fileno(), 4096)
    assert any(name.endswith(".tmp") for name in os.listdir(tmp_path))  # caught while the temporary file is there
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    err = (seen + err).decode()
    assert process.returncode == 128 + signal.SIGTERM, err
    assert err.strip().splitlines()[-1] == "hooktui: ended by SIGTERM; any previous --save file is unchanged", err
    assert "Traceback" not in err, err
    assert prev.read_bytes() == OLD
    assert os.listdir(tmp_path) == ["prev.jsonl"]


POOLED = textwrap.dedent(
    """
    import multiprocessing
    import torch
    from torch import nn


    def square(x):
        return x * x


    class Pooled(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.fc = nn.Linear(3, 1)

        def forward(self, x):
            with multiprocessing.get_context(METHOD).Pool(1) as pool:
                scale = sum(pool.map(square, [1, 2, 3]))
            return self.fc(x) * scale


    model = Pooled()
    inputs = torch.ones(2, 3)
    """
)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_pool_over_a_function_of_the_model_file_runs(tmp_path, method):
    model = tmp_path / "pooled.py"
    model.write_text(f"METHOD = {method!r}\n" + POOLED)
    result = _hooktui("trace", model, "--json")
    assert result.returncode == 0, result.stderr.decode()
    import torch

    torch.manual_seed(0)
    expected = (torch.nn.Linear(3, 1)(torch.ones(2, 3)) * (1 + 4 + 9)).max().item()  # what the workers' squares make
    root = [e for e in map(json.loads, result.stdout.decode().splitlines()) if e["hook"] == "forward" and e["module"] == ""]
    output = [t for t in root[0]["tensors"] if t["name"].startswith("output")]
    assert output[0]["stats"]["max"] == pytest.approx(expected, rel=1e-6), output


def test_a_model_file_named_like_a_taken_module_says_why_pickle_fails(tmp_path):
    model = tmp_path / "test.py"  # `test` is the standard library's package: the file gets a private name
    model.write_text("METHOD = 'fork'\n" + POOLED)
    result = _hooktui("trace", model, redirect=">/dev/null")
    line = _one_clean_line(result)
    assert result.returncode == 2, line
    assert "PicklingError" in line and "rename the file" in line and "check that the inputs fit" not in line, line
