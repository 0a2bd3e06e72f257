"""`trace --save`: checked before the model runs (one message, exit 2), written atomically
(a failure leaves any previous file as it was), and saved even when stdout is a closed pipe."""

from __future__ import annotations

import errno
import os
import subprocess
import sys

import pytest

from cli_run import ROOT, SAMPLES, hooktui
from hooktui.engine.records import trace_file
from hooktui.engine.records.records import Event, ModuleInfo, TraceInfo
from hooktui.engine.records.trace_file import TraceFileError, check_save_path, read_trace, write_trace

SEED = SAMPLES / "seed.py"


@pytest.mark.parametrize(
    "target, message",
    [
        pytest.param("", "--save needs a file name", id="empty"),
        pytest.param("{tmp}", "is a folder", id="folder"),
        pytest.param("{tmp}/missing/run.jsonl", "folder {tmp}/missing does not exist", id="missing-folder"),
        pytest.param("/dev/null", "not a regular file", id="device"),
    ],
)
def test_a_bad_save_path_is_refused_before_the_model_runs(tmp_path, target, message):
    result = hooktui("trace", SEED, "--save", target.format(tmp=tmp_path))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hooktui: ") and message.format(tmp=tmp_path) in lines[0], result.stderr
    assert result.stdout == ""  # refused before anything ran


def test_an_unwritable_folder_is_refused(tmp_path, monkeypatch):
    folder = tmp_path / "ro"
    folder.mkdir()
    if os.geteuid() == 0:  # root writes anywhere: pretend the folder says no
        real = os.access
        monkeypatch.setattr(os, "access", lambda p, mode, **k: False if str(p) == str(folder) else real(p, mode, **k))
    else:
        folder.chmod(0o555)
    with pytest.raises(TraceFileError, match="cannot write in folder"):
        check_save_path(folder / "run.jsonl")


def _info():
    return TraceInfo("m", [ModuleInfo("", "Net")], "l")


def _events(n):
    return [Event(index=i, phase="forward", hook="forward", module="", module_type="Net", call=i) for i in range(n)]


def test_a_failed_write_leaves_the_old_file_and_no_litter(tmp_path, monkeypatch):
    path = tmp_path / "run.jsonl"
    write_trace(path, _info(), _events(3))
    before = path.read_bytes()

    def full_disk(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(trace_file.os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        write_trace(path, _info(), _events(50))
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["run.jsonl"]


def test_saved_file_has_a_plain_files_mode(tmp_path):
    path = tmp_path / "run.jsonl"
    write_trace(path, _info(), _events(1))
    umask = os.umask(0)
    os.umask(umask)
    assert (path.stat().st_mode & 0o777) == (0o666 & ~umask)


def test_save_still_happens_when_stdout_is_a_closed_pipe(tmp_path):
    full = tmp_path / "full.jsonl"
    assert hooktui("trace", SAMPLES / "cnn.py", "--save", full).returncode == 0
    piped = tmp_path / "piped.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    process = subprocess.Popen(
        [sys.executable, "-m", "hooktui", "trace", str(SAMPLES / "cnn.py"), "--json", "--save", str(piped)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
    )
    process.stdout.close()  # like `| head` that already finished
    _, err = process.communicate(timeout=180)
    assert process.returncode == 0, err
    assert b"Traceback" not in err and b"BrokenPipe" not in err
    assert len(read_trace(piped)[1]) == len(read_trace(full)[1])
