"""The worker's side of ranks.py: what every multi-process worker of this folder does around
its own checks (join the process group, write what it saw, leave the group)."""

from __future__ import annotations

import gc
import json
import sys
from collections.abc import Callable

import torch.distributed as dist


def run_rank(checks: Callable[[dict], None]) -> None:
    """One rank's main: join the process group (gloo, from the environment run_ranks sets),
    call `checks(result)`, which fills `result` (it starts as {"rank": this rank}), then write
    `result` as JSON to argv[1] (also when `checks` raised: how far it got) and destroy the
    process group.

    Everything that holds the process group (the models, their DDP / FSDP wrappers, a device
    mesh) must be a local of `checks` or of what it calls: freed when `checks` returns, before
    the group is destroyed, its gloo threads end while the interpreter is alive. Held until
    interpreter teardown (by module globals, or by locals of the function that destroys the
    group), a gloo thread freeing the last collective's tensors aborts the process ("terminate
    called without an active exception") about one run in three, a PyTorch race that a plain
    DDP script hits as often. gc.collect() frees what a stop left in cycles (its traceback's
    frames) now, not at teardown."""
    dist.init_process_group("gloo")
    result = {"rank": dist.get_rank()}
    try:
        checks(result)
    finally:
        with open(sys.argv[1], "w") as out:
            json.dump(result, out)
        gc.collect()
        dist.destroy_process_group()
