"""One rank of test_dist_round4.py's compile test: a DDP model whose module is compiled with
inductor, stepped under `hooktui.guard` and then `hooktui.debug` beside a twin stepped
plainly. The guard's NaN hunt once put a TorchFunctionMode around the compiled forward,
which the compiler traced (a graph break at every op): other kernels, `.grad` off by up to
2e-7 at this size. Writes what it saw to the JSON file named by argv[1]."""

import torch
from torch import nn

import hooktui
from rank_main import run_rank


def build() -> nn.Module:
    # Small: inductor compiles each graph in seconds on a busy CPU; at width 4 the split
    # graphs gave other bits (16 happened to give the same).
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.GELU(), nn.LayerNorm(4), nn.Linear(4, 1))
    return nn.parallel.DistributedDataParallel(torch.compile(model, backend="inductor"))


def checks(result: dict) -> None:
    x = torch.randn(8, 4, generator=torch.Generator().manual_seed(0))
    model, twin = build(), build()
    twin(x).pow(2).mean().backward()
    with hooktui.guard(model):
        model(x).pow(2).mean().backward()
    result["guard_grads_equal_plain"] = all(torch.equal(p.grad, q.grad) for p, q in zip(model.parameters(), twin.parameters()))
    loss = hooktui.debug(model, lambda: model(x).pow(2).mean())
    plain = twin(x).pow(2).mean()
    plain.backward()
    result["debug_loss_equal_plain"] = torch.equal(loss, plain.detach())
    result["debug_grads_equal_plain"] = all(torch.equal(p.grad, q.grad) for p, q in zip(model.parameters(), twin.parameters()))


if __name__ == "__main__":
    run_rank(checks)
