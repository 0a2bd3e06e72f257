"""Run `python -m hooktui ...` in subprocesses. Each one pays ~1.5 s for importing
torch, so the test modules start theirs when they are imported (at collection): they
run on the second core while the engine tests run, and the fixtures collect them."""

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
    """{key: argv tuple} -> {key: Future of CompletedProcess}, started now."""
    return {key: _POOL.submit(hooktui, *argv, cwd=cwd) for key, argv in commands.items()}


def results(futures: dict[object, Future]) -> dict:
    return {key: future.result() for key, future in futures.items()}
