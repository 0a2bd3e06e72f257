"""Run `python -m hooktui ...` in subprocesses. Each one pays ~1.5 s for importing
torch, so the test modules start theirs when they are imported (at collection): they
run on the second core while the engine tests run, and the fixtures collect them (under
pytest-xdist, where the other core has a worker of its own, when first asked for).
A module whose command lines do not depend on a fresh interpreter's start (what is
imported, a pipe for stdout) asks for them `forked`: one interpreter imports torch once and
forks a child a command line (forked_runs.py), ~2 s less a run."""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_models"

_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="hooktui-cli")
atexit.register(_POOL.shutdown, wait=False, cancel_futures=True)


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}


def hooktui(*args: str, cwd: Path | str = ROOT, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hooktui", *map(str, args)],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def hooktui_forked(commands: list[tuple], cwd: Path | str = ROOT, timeout: float = 180) -> list[subprocess.CompletedProcess]:
    """Each argv of `commands` as `hooktui(*argv)` gives it, run by one interpreter that has
    imported torch and forks a child a command (tests/cli/forked_runs.py says what a child
    shares with a fresh `python -m hooktui`, and what not): ~2 s of start saved a command."""
    argvs = [[str(a) for a in argv] for argv in commands]
    with tempfile.TemporaryDirectory(prefix="hooktui-forked-") as folder:
        asked, answered = Path(folder, "commands.json"), Path(folder, "results.json")
        asked.write_text(json.dumps(argvs))
        server = subprocess.run(
            [sys.executable, str(Path(__file__).with_name("forked_runs.py")), str(asked), str(answered), str(timeout)],
            cwd=cwd, env=_env(), capture_output=True, text=True, stdin=subprocess.DEVNULL,
            timeout=timeout * (len(argvs) + 1),
        )
        if server.returncode != 0 or not answered.exists():
            raise RuntimeError(f"forked_runs.py failed ({server.returncode}): {server.stderr[-2000:]}")
        answers = json.loads(answered.read_text())
    done = []
    for argv, answer in zip(argvs, answers):
        full = [sys.executable, "-m", "hooktui", *argv]
        stdout, stderr = (_universal_newlines(answer[name]) for name in ("stdout", "stderr"))
        if answer["timed_out"]:
            raise subprocess.TimeoutExpired(full, timeout, stdout, stderr)
        done.append(subprocess.CompletedProcess(full, answer["returncode"], stdout, stderr))
    return done


def _universal_newlines(text: str) -> str:
    """What subprocess's text mode makes of a child's line ends."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def start_many(commands: dict, cwd: Path | str = ROOT, forked: bool = False) -> dict[object, Future]:
    """{key: argv tuple} -> {key: Future of CompletedProcess}, started now; under
    pytest-xdist, started when a test first asks for one of them: every worker imports every
    test module, and only the worker that runs the module's tests should pay for its runs.
    `forked`: all in one interpreter that forks a child a command (hooktui_forked)."""
    batch = _Batch(commands, cwd, forked)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return {key: _Later(batch, key) for key in commands}
    return {key: batch.future(key) for key in commands}


class _Batch:
    """A module's commands, all submitted together the first time one is asked for."""

    def __init__(self, commands: dict, cwd: Path | str, forked: bool = False) -> None:
        self.commands, self.cwd, self.forked = commands, cwd, forked
        self.futures: dict[object, Future] | None = None

    def future(self, key: object) -> Future:
        if self.futures is None:
            if self.forked:
                keys = list(self.commands)
                whole = _POOL.submit(hooktui_forked, [self.commands[k] for k in keys], cwd=self.cwd)
                self.futures = {k: _Part(whole, i) for i, k in enumerate(keys)}
            else:
                self.futures = {k: _POOL.submit(hooktui, *argv, cwd=self.cwd) for k, argv in self.commands.items()}
        return self.futures[key]


class _Part:
    """Stands for the Future of one command of a forked batch: its place in the batch's list."""

    def __init__(self, whole: Future, index: int) -> None:
        self.whole, self.index = whole, index

    def result(self, timeout: float | None = None) -> subprocess.CompletedProcess:
        return self.whole.result(timeout)[self.index]


class _Later:
    """Stands for the Future of one command of a batch not started yet."""

    def __init__(self, batch: _Batch, key: object) -> None:
        self.batch, self.key = batch, key

    def result(self, timeout: float | None = None) -> subprocess.CompletedProcess:
        return self.batch.future(self.key).result(timeout)


def results(futures: dict[object, Future]) -> dict:
    return {key: future.result() for key, future in futures.items()}
