"""One rank of the two-process tensor-parallel test (test_tp.py): `record`, `guard` and
`debug` on a model parallelised with ColwiseParallel / RowwiseParallel, beside an identical
twin stepped plainly. Writes what it saw to the JSON file named by argv[1]."""

import json
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
from torch.nn import functional as F

import hooktui


def build(mesh) -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8), nn.Linear(8, 1))
    return parallelize_module(model, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})


def grads(model: nn.Module) -> dict:
    return {name: None if p.grad is None else (type(p.grad).__name__, _local(p.grad)) for name, p in model.named_parameters()}


def params(model: nn.Module) -> dict:
    return {name: (type(p).__name__, _local(p)) for name, p in model.named_parameters()}


def _local(t: torch.Tensor) -> torch.Tensor:
    return (t.to_local() if isinstance(t, DTensor) else t).detach().clone()


def same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        (x is None and y is None) or (x is not None and y is not None and x[0] == y[0] and torch.equal(x[1], y[1]))
        for x, y in ((a[k], b[k]) for k in a)
    )


def main() -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    result = {"rank": rank}
    try:
        mesh = init_device_mesh("cpu", (2,))
        model, twin = build(mesh), build(mesh)
        # TP: every rank is given the same batch.
        x = torch.randn(4, 8, generator=torch.Generator().manual_seed(10))
        y = torch.randn(4, 1, generator=torch.Generator().manual_seed(20))
        start = params(model)

        trace = hooktui.record(model, x, lambda out: F.mse_loss(out, y))
        result["record_error"] = None if trace.error is None else trace.error.message
        result["record_left_model"] = same(params(model), start) and all(p.grad is None for p in model.parameters())
        result["failures"] = [n for e in trace.events for n in e.notes if n.startswith("hooktui failed")]

        with hooktui.guard(model, max_grad_norm=1e6):
            F.mse_loss(model(x), y).backward()
        F.mse_loss(twin(x), y).backward()
        result["guard_grads_equal_plain"] = same(grads(model), grads(twin)) and grads(model)["0.weight"][0] == "DTensor"

        loss = hooktui.debug(model, lambda: F.mse_loss(model(x), y))
        plain = F.mse_loss(twin(x), y)
        plain.backward()
        result["debug_loss_equal_plain"] = torch.equal(loss, plain.detach())
        result["debug_grads_equal_plain"] = same(grads(model), grads(twin))
        result["params_equal_plain"] = same(params(model), params(twin))
    finally:
        with open(sys.argv[1], "w") as out:
            json.dump(result, out)
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
