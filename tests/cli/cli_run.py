"""Run `python -m hooktui ...` in subprocesses. Each one pays ~1.5 s for importing
torch, so the test modules start theirs when they are imported (at collection): they
run on the second core while the engine tests run, and the fixtures collect them (under
pytest-xdist, where the other core has a worker of its own, when first asked for)."""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_models"

_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="hooktui-cli")
atexit.register(_POOL.shutdown, wait=False, cancel_futures=True)


def hooktui(*args: str, cwd: Path | str = ROOT, timeout: float = 180) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    return subprocess.run(
        [sys.executable, "-m", "hooktui", *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def start_many(commands: dict, cwd: Path | str = ROOT) -> dict[object, Future]:
    """{key: argv tuple} -> {key: Future of CompletedProcess}, started now; under
    pytest-xdist, started when a test first asks for one of them: every worker imports every
    test module, and only the worker that runs the module's tests should pay for its runs."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        batch = _Batch(commands, cwd)
        return {key: _Later(batch, key) for key in commands}
    return {key: _POOL.submit(hooktui, *argv, cwd=cwd) for key, argv in commands.items()}


class _Batch:
    """A module's commands, all submitted together the first time one is asked for."""

    def __init__(self, commands: dict, cwd: Path | str) -> None:
        self.commands, self.cwd = commands, cwd
        self.futures: dict[object, Future] | None = None

    def future(self, key: object) -> Future:
        if self.futures is None:
            self.futures = {k: _POOL.submit(hooktui, *argv, cwd=self.cwd) for k, argv in self.commands.items()}
        return self.futures[key]


class _Later:
    """Stands for the Future of one command of a batch not started yet."""

    def __init__(self, batch: _Batch, key: object) -> None:
        self.batch, self.key = batch, key

    def result(self, timeout: float | None = None) -> subprocess.CompletedProcess:
        return self.batch.future(self.key).result(timeout)


def results(futures: dict[object, Future]) -> dict:
    return {key: future.result() for key, future in futures.items()}
