"""Two ranks (gloo, CPU) training a DDP model armed by hooktui: each writes OUT/pid<rank>
once armed, waits for OUT/go, trains STEPS steps. Started by tests/loop/ranks.py's way."""

import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn

import hooktui

STEPS = 6


def main() -> None:
    out = Path(sys.argv[1]).parent
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 1)))
    hooktui.arm(model)
    (out / f"pid{rank}").write_text(str(os.getpid()))
    deadline = time.monotonic() + 120
    while not (out / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(STEPS):
        x = torch.randn(2, 4, generator=torch.Generator().manual_seed(10 * step + rank))
        optimizer.zero_grad()
        model(x).pow(2).mean().backward()
        optimizer.step()
    (out / f"result{rank}.json").write_text("{}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
