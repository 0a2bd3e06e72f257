"""One rank of test_sharded_setups.py: FSDP1 with flat parameters, FSDP1 with
use_orig_params=True, and FSDP2 with activation checkpointing (checkpoint_wrapper), each at
a width below hooktui's snapshot size (every value of a tensor copied) and one above it
(statistics from moments, values from a leading block), under `record`, `guard` and
`debug` beside a twin built the same way and stepped plainly. Last, a NaN put into one
element of rank 0's shard of a weight: FSDP gathers it for the forward, so every rank's
guard stops at the same firing (no rank is left waiting in a collective), each saying its
rank and whether its own shard holds the NaN; the loop catches the error and goes on
under the same guard, whose next step stops the same way; the model is left as a plain
error there leaves the twin. And a NaN in one weight's gradient on every rank: the guard
names the parameter (inside FSDP1's FlatParameter) and this rank's shard (FSDP2). Writes
what it saw to the JSON file named by argv[1]."""

import gc
import json
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
    checkpoint_wrapper,
)
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP1
from torch.distributed.fsdp import fully_shard
from torch.distributed.fsdp.wrap import ModuleWrapPolicy
from torch.distributed.tensor import DTensor
from torch.nn import functional as F

import hooktui
from hooktui.engine.stats import StatsOptions

SETUPS = ("fsdp1", "fsdp1_orig", "fsdp2_ac")
# StatsOptions().snapshot_size is 4,096 elements: at width 8 every tensor is at most 64;
# at 96 the block's [96, 96] weight (9,216; FSDP2's shard of it [48, 96], 4,608; FSDP1's
# flat gradient of its unit 9,312) is above it.
WIDTHS = (8, 96)
BAD = "2.0.weight"  # the parameter whose rank-0 shard is given a NaN


def plain(width: int) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, width), nn.Tanh(), nn.Sequential(nn.Linear(width, width), nn.GELU()), nn.Linear(width, 1))


def build(kind: str, width: int) -> nn.Module:
    model = plain(width)
    if kind.startswith("fsdp1"):
        return FSDP1(model, auto_wrap_policy=ModuleWrapPolicy({nn.Linear}), device_id=torch.device("cpu"),
                     use_orig_params=kind == "fsdp1_orig")
    model[2] = checkpoint_wrapper(model[2])
    for layer in (model[0], model[2], model[3]):
        fully_shard(layer)
    return fully_shard(model)


def linear(model: nn.Module, index: int) -> nn.Module:
    """The model's `index`th nn.Linear (inside whatever wraps it)."""
    return [m for m in model.modules() if isinstance(m, nn.Linear)][index]


def local(t: torch.Tensor) -> torch.Tensor:
    return (t.to_local() if isinstance(t, DTensor) else t).detach().clone()


def params(model: nn.Module) -> dict:
    return {name: (type(p).__name__, p.is_leaf, local(p)) for name, p in model.named_parameters()}


def grads(model: nn.Module) -> dict:
    return {name: None if p.grad is None else (type(p.grad).__name__, local(p.grad)) for name, p in model.named_parameters()}


def same(a: dict, b: dict) -> bool:
    def equal(x, y) -> bool:
        if x is None or y is None:
            return x is y
        # Bit for bit, a NaN equal to a NaN (the poisoned models).
        return x[:-1] == y[:-1] and x[-1].shape == y[-1].shape and torch.allclose(x[-1], y[-1], rtol=0, atol=0, equal_nan=True)
    return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)


def hooks(model: nn.Module) -> int:
    """Every hook on the model's modules and parameters (FSDP's own included)."""
    flats = [m._flat_param for m in model.modules() if getattr(m, "_flat_param", None) is not None]
    tensors = [*model.parameters(), *flats]
    return (sum(len(m._forward_pre_hooks) + len(m._forward_hooks) + len(m._backward_pre_hooks) + len(m._backward_hooks)
                for m in model.modules())
            + sum(len(t._post_accumulate_grad_hooks or {}) + len(t._backward_hooks or {}) for t in tensors))


def block_of(record, expected: torch.Tensor) -> bool:
    """A record's values (the leading block it keeps) equal those of `expected`, bit for bit."""
    if record.values is None or record.values_shape is None:
        return False
    corner = expected[tuple(slice(0, n) for n in record.values_shape)]
    return list(record.shape) == list(expected.shape) and torch.equal(torch.tensor(record.values).reshape(corner.shape), corner)


def poison(model: nn.Module, kind: str, rank: int) -> None:
    """A NaN in the first element of rank 0's shard of BAD; other ranks' shards unchanged."""
    if rank != 0:
        return
    with torch.no_grad():
        if kind == "fsdp2_ac":
            shard = linear(model, 1).weight.to_local().view(-1)
            at = 0
        else:
            (unit,) = [m for m in model.modules() if isinstance(m, FSDP1) and m.module is linear(model, 1)]
            flat = unit._flat_param
            info = flat._shard_param_infos[list(flat._fqns).index("weight")]
            assert info.in_shard and info.intra_param_start_idx == 0
            shard, at = flat._local_shard, info.offset_in_shard
        shard[at] = float("nan")


def grad_nan(kind: str, rank: int) -> str | None:
    """The guard's error when BAD's gradient turns NaN on every rank: a hook of the user's on
    the weight its module computes with, in backward (find_node=False: no node is named
    first). FSDP1: the FlatParameter's unsharded gradient, before the reduce-scatter; FSDP2:
    this rank's shard of it, after. Every rank stops at the same firing."""
    model = build(kind, 8)
    x = torch.randn(4, 4, generator=torch.Generator().manual_seed(10 + rank))

    def poisoned_grad(module, args):
        module.weight.register_hook(lambda g: g * float("nan"))

    linear(model, 1).register_forward_pre_hook(poisoned_grad)
    try:
        with hooktui.guard(model, find_node=False):
            model(x).sum().backward()
    except Exception as exc:  # the type is what is checked
        return f"{type(exc).__name__}: {exc}"
    return None


def one_setup(kind: str, width: int, rank: int) -> dict:
    out = {}
    model, twin = build(kind, width), build(kind, width)
    x = torch.randn(4, 4, generator=torch.Generator().manual_seed(10 + rank))  # each rank its own batch
    y = torch.randn(4, 1, generator=torch.Generator().manual_seed(20 + rank))
    start, hooked = params(model), hooks(model)

    trace = hooktui.record(model, x, lambda o: F.mse_loss(o, y))
    out["record_error"] = None if trace.error is None else trace.error.message
    out["failures"] = [n for e in trace.events for n in e.notes if n.startswith("hooktui failed")]
    out["record_left_model"] = same(params(model), start) and all(p.grad is None for p in model.parameters()) and hooks(model) == hooked

    with hooktui.guard(model, max_grad_norm=1e6):
        F.mse_loss(model(x), y).backward()
    seen = {}
    handle = linear(twin, 2).register_forward_hook(lambda m, a, o: seen.__setitem__("out", o.detach().clone()))
    F.mse_loss(twin(x), y).backward()
    handle.remove()
    out["guard_grads_equal_plain"] = same(grads(model), grads(twin)) and hooks(model) == hooked

    # record's firings, against plain module hooks and gradients.
    (last,) = [e for e in trace.events if e.hook == "forward" and e.module == "3" and e.module_type.endswith("Linear")]
    (shown,) = [t for t in last.tensors if t.name == "output"]
    out["record_output_equal_hook"] = block_of(shown, seen["out"])
    if kind.startswith("fsdp1"):
        # FSDP1: the flat gradient split back into BAD's part: this rank's own gradient, before
        # the reduce-scatter, as an unwrapped copy computes it on this rank's batch.
        alone = plain(width)
        F.mse_loss(alone(x), y).backward()
        expected = linear(alone, 1).weight.grad
        (grad,) = [t for e in trace.events if e.hook == "param_grad" for t in e.tensors if t.target == BAD and t.extra]
    else:
        # FSDP2: this rank's shard after the reduce-scatter, as the plain step leaves .grad.
        expected = linear(twin, 1).weight.grad.to_local()
        (grad,) = [t for e in trace.events if e.hook == "param_grad" for t in e.tensors if t.target == BAD]
    out["record_grad_equal_plain"] = block_of(grad, expected)
    out["record_grad_sampled"] = grad.shape is not None and torch.Size(grad.shape).numel() > StatsOptions().snapshot_size

    model.zero_grad(set_to_none=True)
    twin.zero_grad(set_to_none=True)
    loss = hooktui.debug(model, lambda: F.mse_loss(model(x), y))
    expected_loss = F.mse_loss(twin(x), y)
    expected_loss.backward()
    out["debug_loss_equal_plain"] = torch.equal(loss, expected_loss.detach())
    out["debug_grads_equal_plain"] = same(grads(model), grads(twin)) and hooks(model) == hooked
    out["params_equal_plain"] = same(params(model), params(twin))

    # The NaN in rank 0's shard: the guard stops at the forward of BAD's module on every rank;
    # the twin, poisoned alike, stops there by a plain hook's error. The loop catches the
    # error and goes on under the same guard: the next step stops at the same firing, said
    # the same way (its tracer was started mid-forward, while FSDP held the gathered weights).
    def stop(module, args, output):
        if not torch.isfinite(output).all():
            raise ValueError("a plain hook saw the NaN")

    poison(model, kind, rank)
    poison(twin, kind, rank)
    out["guard_errors"] = []
    with hooktui.guard(model):
        for _ in range(2):
            try:
                F.mse_loss(model(x), y).backward()
                out["guard_errors"].append(None)
            except Exception as exc:  # the type is what is checked
                out["guard_errors"].append(f"{type(exc).__name__}: {exc}")
    out["guard_left_no_hook"] = hooks(model) == hooked
    linear(twin, 1).register_forward_hook(stop)
    for _ in range(2):
        try:
            F.mse_loss(twin(x), y).backward()
        except ValueError:
            pass
    out["nan_left_model_as_plain"] = same(params(model), params(twin))
    return out


def main() -> None:
    # The models are locals of one_setup() and grad_nan(), freed before the process group is destroyed
    # (dist_worker.py says why).
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    result = {"rank": rank}
    try:
        for kind in SETUPS:
            for width in WIDTHS:
                result[f"{kind}/{width}"] = one_setup(kind, width, rank)
            result[f"{kind}/grad_nan"] = grad_nan(kind, rank)
    finally:
        with open(sys.argv[1], "w") as out:
            json.dump(result, out)
        gc.collect()  # models a stop left in cycles (its traceback's frames) go now, not at teardown
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
