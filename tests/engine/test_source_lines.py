"""Source lines are read only from small regular Python files, never from a device, a pipe
or /proc; saved traces carry the lines their firings need."""

from __future__ import annotations

import os

import pytest

from finishing import finishes
from hooktui.engine.records.records import Event, ModuleInfo, SourceLocation, TraceInfo
from hooktui.engine.records.source_lines import CONTEXT, SOURCE_FILE_MAX, lines_near, read_source_file
from hooktui.engine.records.trace_file import read_trace_file, write_trace


def test_a_small_python_file_is_read(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("a = 1\nb = 2\n")
    assert read_source_file(str(path)) == ["a = 1", "b = 2"]


@pytest.mark.parametrize("name", ["/dev/tty", "/dev/zero", "/proc/self/environ", "/etc/passwd"])
def test_devices_proc_and_non_python_files_are_not_read(name):
    assert finishes(read_source_file, name) is None  # not read to the end of /dev/zero


def test_a_pipe_named_like_python_is_not_opened(tmp_path):
    fifo = tmp_path / "model.py"
    os.mkfifo(fifo)
    assert finishes(read_source_file, str(fifo)) is None  # opening it would block until a writer came


def test_links_and_large_files_are_not_read(tmp_path):
    link = tmp_path / "env.py"
    link.symlink_to("/proc/self/environ")
    assert read_source_file(str(link)) is None
    big = tmp_path / "big.py"
    big.write_bytes(b"#" * (SOURCE_FILE_MAX + 1))
    assert read_source_file(str(big)) is None


def test_lines_near_keeps_the_context_of_each_call_site(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("".join(f"line {n}\n" for n in range(1, 101)))
    kept = lines_near([(str(path), 50), (str(path), 52), ("/dev/tty", 1)])
    assert set(kept) == {str(path)}
    assert sorted(kept[str(path)]) == list(range(50 - CONTEXT, 52 + CONTEXT + 1))
    assert kept[str(path)][50] == "line 50"


def test_a_saved_trace_carries_its_source_lines(tmp_path):
    model = tmp_path / "m.py"
    model.write_text("".join(f"x{n} = {n}\n" for n in range(1, 41)))
    event = Event(index=0, phase="forward", hook="forward", module="", module_type="M", call=0,
                  source=SourceLocation(str(model), 20, "f", "x20 = 20"))
    info = TraceInfo(model=str(model), modules=[ModuleInfo("", "M")], loss="l")
    write_trace(tmp_path / "t.jsonl", info, [event])
    model.unlink()  # the viewer needs no file
    loaded = read_trace_file(tmp_path / "t.jsonl")
    assert loaded.sources[str(model)][20] == "x20 = 20"
    assert min(loaded.sources[str(model)]) == 20 - CONTEXT


def test_a_python_named_link_to_a_non_python_file_is_not_read(tmp_path):
    """The rules apply to the symlink's target (issue 24): `model.py -> secret.txt` is not shown."""
    secret = tmp_path / "secret.txt"
    secret.write_text("password = hunter2\n")
    link = tmp_path / "model.py"
    link.symlink_to(secret)
    assert read_source_file(str(link)) is None
    real = tmp_path / "real.py"
    real.write_text("x = 1\n")
    (tmp_path / "alias.py").symlink_to(real)
    assert read_source_file(str(tmp_path / "alias.py")) == ["x = 1"]  # a link to a Python file is fine
