"""One rank of the two-process test (test_distributed.py): a DDP step under hooktui.debug.

Both ranks are given a terminal (as under torchrun in an interactive shell); the app, where
it opens, is driven by Textual's pilot (`c` to the end, then `q`). Writes what happened to
the JSON file named by argv[1]."""

import asyncio
import gc
import os
import weakref

import torch
import torch.distributed as dist
from torch import nn

import hooktui
import hooktui.loop.in_app
import hooktui.loop.where
from loop_helpers import continue_then_quit
from rank_main import run_rank


def open_app(app) -> None:
    opened.append(True)

    async def drive() -> None:
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            await continue_then_quit(pilot)

    asyncio.run(drive())


def build() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 1))


opened: list[bool] = []
hooktui.loop.where.terminal_attached = lambda: True
hooktui.loop.in_app.open_app = open_app


def checks(result: dict) -> None:
    # The DDP models are locals here, freed before the process group is destroyed (run_rank
    # says why).
    rank = result["rank"]
    x = torch.randn(6, 4, generator=torch.Generator().manual_seed(10 + rank))  # each rank its own batch
    model, twin = nn.parallel.DistributedDataParallel(build()), nn.parallel.DistributedDataParallel(build())

    loss = hooktui.debug(model, lambda: model(x).pow(2).mean())
    twin(x).pow(2).mean().backward()  # the same step in plain torch (gradients averaged over the ranks)

    same = all(torch.equal(p.grad, q.grad) for p, q in zip(model.parameters(), twin.parameters()))
    # This rank's own gradient, before any all-reduce: a plain copy, unwrapped, on this rank's batch.
    alone = build()
    alone(x).pow(2).mean().backward()
    local = {name: p.grad.reshape(-1).tolist() for name, p in alone.named_parameters()}
    final = {name.removeprefix("module."): p.grad.reshape(-1).tolist() for name, p in model.named_parameters()}
    # What the final_grad firings must show: the plain DDP twin's .grad (the average over the ranks).
    plain_final = {name.removeprefix("module."): p.grad.reshape(-1).tolist() for name, p in twin.named_parameters()}
    gathered = [None, None]
    dist.all_gather_object(gathered, [p.grad.tolist() for p in model.parameters()])
    # hooktui keeps nothing of the model once debug() returns (its hooks, records and app are gone).
    held = weakref.ref(model)
    model = twin = None
    gc.collect()
    result.update({"pid": os.getpid(), "opened": bool(opened), "grads_equal_plain": same,
                   "grads_equal_across_ranks": gathered[0] == gathered[1], "loss": float(loss),
                   "local_grads": local, "final_grads": final, "plain_final_grads": plain_final, "model_freed": held() is None})


if __name__ == "__main__":
    run_rank(checks)
