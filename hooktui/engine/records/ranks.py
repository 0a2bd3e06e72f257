"""Which process of a distributed run this is: its rank and the world size, as a trace's
header records them so that `hooktui diff` can say which rank parted first.

torch.distributed when a process group is initialized (what the collectives use); else
torchrun's environment (RANK and WORLD_SIZE, or LOCAL_RANK alone); else not distributed
(None, None). torch.distributed is read only if something imported it already.
"""

from __future__ import annotations

import os
import sys

# The largest rank or world size a trace's header may carry (a C int, as PyTorch's).
RANK_MAX = 2**31 - 1


def env_int(name: str) -> int | None:
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name}={value!r}: expected a whole number (a process rank)") from None


def process_rank() -> int | None:
    """This process's rank under torchrun (RANK, else LOCAL_RANK); None when not launched so."""
    rank = env_int("RANK")
    return rank if rank is not None else env_int("LOCAL_RANK")


def rank_and_world() -> tuple[int | None, int | None]:
    """(rank, world size) of this process, each None when unknown; never raises. A world
    size is only given with a rank below it."""
    rank, world = _from_process_group()
    if rank is None:
        try:
            rank = process_rank()
            world = env_int("WORLD_SIZE") if env_int("RANK") is not None else None
        except ValueError:  # a malformed RANK: said where it matters (loop/where.py), not here
            return None, None
    if rank is None or not 0 <= rank <= RANK_MAX:
        return None, None
    if world is None or not rank < world <= RANK_MAX:
        world = None
    return rank, world


def ranked() -> dict[str, int | None]:
    """TraceInfo's `rank` and `world_size`, for this process."""
    rank, world = rank_and_world()
    return {"rank": rank, "world_size": world}


def _from_process_group() -> tuple[int | None, int | None]:
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None, None
    try:
        return int(dist.get_rank()), int(dist.get_world_size())
    except (RuntimeError, ValueError):  # a process group being torn down: the environment says
        return None, None
