"""Where a debugged step goes: the app, when this process has a terminal and (under
torchrun) is the rank named by HOOKTUI_RANK; otherwise a trace file, named
`hooktui-<pid>-<n>[-step<k>][-rank<r>].jsonl`, in HOOKTUI_DIR or the working directory."""

from __future__ import annotations

import itertools
import os
import sys
import threading
from pathlib import Path

from ..engine.records.ranks import env_int as _env_int
from ..engine.records.ranks import process_rank

# Set while `hooktui run` runs a script (commands/run.py): guard's default is then to open the app.
under_hooktui_run = False

_counter = itertools.count(1)
_counter_lock = threading.Lock()


def app_rank() -> int:
    """The rank that opens the app (HOOKTUI_RANK, default 0)."""
    rank = _env_int("HOOKTUI_RANK")
    return 0 if rank is None else rank


def terminal_attached() -> bool:
    """Can the app run here: the main thread, with a terminal to read keys from and draw on
    (Textual reads stdin and draws on stderr)? Not under nohup, a batch job, CI, a notebook."""
    if threading.current_thread() is not threading.main_thread():
        return False
    try:
        return sys.__stdin__.isatty() and sys.__stderr__.isatty()
    except (AttributeError, ValueError, OSError):  # closed or missing streams
        return False


def opens_app() -> bool:
    rank = process_rank()
    return (rank is None or rank == app_rank()) and terminal_attached()


def trace_folder() -> Path:
    folder = os.environ.get("HOOKTUI_DIR", "").strip()
    path = Path(folder) if folder else Path.cwd()
    if not path.is_dir():
        what = "not a folder" if path.exists() else "no such folder"
        raise ValueError(f"HOOKTUI_DIR={folder!r}: {what} (hooktui writes its trace files there)")
    if not os.access(path, os.W_OK | os.X_OK):
        raise ValueError(f"{path}: cannot write trace files in this folder (set HOOKTUI_DIR to one you can write)")
    return path


def new_trace_path(tag: str | None = None) -> Path:
    """A trace file name not used yet: hooktui-<pid>-<n>[-<tag>][-rank<r>].jsonl (a trainer
    callback's tag: `step12`)."""
    folder = trace_folder()
    rank = process_rank()
    suffix = ("" if tag is None else f"-{tag}") + ("" if rank is None else f"-rank{_bounded(rank)}")
    while True:
        with _counter_lock:
            n = next(_counter)
        path = folder / f"hooktui-{os.getpid()}-{n}{suffix}.jsonl"
        if not path.exists():  # a pid seen before in this folder: never overwrite its trace
            return path


RANK_DIGITS = 20  # a rank's digits in a file name; a longer one (RANK=<300 digits>) is cut


def _bounded(rank: int) -> str:
    """The rank as it goes in a file name, never long enough to make the name too long."""
    digits = str(rank)
    return digits if len(digits) <= RANK_DIGITS else f"{digits[:RANK_DIGITS]}_{len(digits)}digits"


def shown(path: Path) -> str:
    """The path as the user would type it: relative when it is under the working directory."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def user_line() -> str | None:
    """file:line of the user's code running now, under torch's and hooktui's frames (the
    `loss.backward()` a guard stopped in); None where there is none on this thread (a CUDA
    backward's hooks run on autograd's worker thread)."""
    import torch

    internal = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,
                os.path.dirname(os.path.abspath(torch.__file__)) + os.sep)
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(internal):
        frame = frame.f_back
    if frame is None or frame.f_code.co_filename.startswith("<"):
        return None
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"


def call_site() -> str:
    """file:line of the user's code that called into hooktui (the first frame outside it)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(here):
        frame = frame.f_back
    return "?" if frame is None else f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
