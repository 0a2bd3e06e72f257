"""Start a worker script as torchrun would, one process per rank (gloo, CPU), and collect
what each wrote: every multi-process test of this folder runs its worker through here."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(worker: str, tmp_path: Path, world: int = 2, env: dict | None = None,
              timeout: float = 120) -> tuple[list[dict], list[str]]:
    """Run `worker` (a file beside this one) on `world` ranks; each writes
    tmp_path/result<rank>.json. Returns those results and each rank's stderr; a rank that
    fails fails the test with its stderr's end. Every process is gone on return."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    base.update({"WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()),
                 "HOOKTUI_DIR": str(tmp_path), "PYTHONPATH": str(HERE.parents[1]), **(env or {})})
    processes = [
        subprocess.Popen(
            [sys.executable, str(HERE / worker), str(tmp_path / f"result{rank}.json")],
            env={**base, "RANK": str(rank), "LOCAL_RANK": str(rank)},
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for rank in range(world)
    ]
    outputs = []
    try:
        for process in processes:
            outputs.append(process.communicate(timeout=timeout))
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    for process, (_, err) in zip(processes, outputs):
        assert process.returncode == 0, err[-3000:]
    results = [json.loads((tmp_path / f"result{rank}.json").read_text()) for rank in range(world)]
    return results, [err for _, err in outputs]
