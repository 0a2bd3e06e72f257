"""One rank of the two-process FSDP2 test (test_fsdp2.py): `record`, `guard` and `debug`
on a model sharded with `fully_shard`, beside an identical twin stepped plainly. Writes
what it saw to the JSON file named by argv[1]. FSDP1's flat parameters, whose sharding
also needs two ranks, are checked on these same processes (`fsdp1_*`)."""

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP1
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor
from torch.nn import functional as F

import hooktui
from hooktui.engine.summaries import stats
from rank_main import run_rank


def raising(*_args, **_kwargs):
    raise RuntimeError("a summary forced to fail")


def build() -> nn.Module:
    # fc2's weight shard (48 x 96 on each rank) is above the snapshot size; head's [1, 96]
    # weight is sharded unevenly (rank 1's shard is empty).
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 96), nn.GELU(), nn.Linear(96, 96), nn.LayerNorm(96), nn.Linear(96, 1))
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer)
    return fully_shard(model)


def shards(model: nn.Module) -> dict:
    return {name: (type(p).__name__, p.to_local().clone()) for name, p in model.named_parameters()}


def grads(model: nn.Module) -> dict:
    return {name: None if p.grad is None else (type(p.grad).__name__, p.grad.to_local().clone()) for name, p in model.named_parameters()}


def same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        (x is None and y is None) or (x is not None and y is not None and x[0] == y[0] and torch.equal(x[1], y[1]))
        for x, y in ((a[k], b[k]) for k in a)
    )


def fsdp1_split_grads(result: dict, x: torch.Tensor) -> None:
    """FSDP1 (FULL_SHARD, one flat parameter): record's param_grad split back into the named
    parameters equals an unwrapped copy's gradient on this rank's batch (before the
    reduce-scatter), while .grad ends as this rank's shard of the flattened average."""
    def small() -> nn.Module:
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(8, 6), nn.Tanh(), nn.Linear(6, 1))

    model, alone = FSDP1(small(), device_id=torch.device("cpu")), small()
    alone(x).sum().backward()
    trace = hooktui.record(model, x, lambda out: out.sum())
    (event,) = [e for e in trace.events if e.hook == "param_grad"]
    shown = {t.target: t.values for t in event.tensors}
    result["fsdp1_note"] = event.notes[0]
    result["fsdp1_split_equal_local"] = all(shown.get(name) == p.grad.reshape(-1).tolist() for name, p in alone.named_parameters())
    result["fsdp1_flat_shape"] = event.tensors[0].shape
    # After the backward: each parameter's part of this rank's shard of the average (the
    # expectation: the unwrapped copies' gradients averaged with a plain all-reduce).
    average = {}
    for name, p in alone.named_parameters():
        total = p.grad.clone()
        dist.all_reduce(total)
        average[name] = (total / dist.get_world_size()).reshape(-1).tolist()
    result["fsdp1_average"] = average
    result["fsdp1_finals"] = [[e.module, e.notes, t.target, t.shape, t.values, t.note, t.missing]
                              for e in trace.events if e.hook == "final_grad" for t in e.tensors]
    with model.no_sync():  # no reduce-scatter: .grad is what param_grad shows
        quiet = hooktui.record(model, x, lambda out: out.sum())
    result["fsdp1_no_sync_hooks"] = sorted({e.hook for e in quiet.events})


def checks(result: dict) -> None:
    rank = result["rank"]
    model, twin = build(), build()
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(10 + rank))
    y = torch.randn(4, 1, generator=torch.Generator().manual_seed(20 + rank))
    start = shards(model)
    seen = {}
    handle = model[2].register_forward_hook(lambda m, a, out: seen.__setitem__("fc2", out.detach().clone()))

    trace = hooktui.record(model, x, lambda out: F.mse_loss(out, y))
    handle.remove()
    result["record_error"] = None if trace.error is None else trace.error.message
    result["record_left_shards"] = same(shards(model), start) and all(p.grad is None for p in model.parameters())
    (fc2,) = [e for e in trace.events if e.hook == "forward" and e.module == "2"]
    (out,) = [t for t in fc2.tensors if t.name == "output"]
    result["fc2_output_equal_hook"] = torch.equal(torch.tensor(out.values).reshape(4, 96), seen["fc2"])
    dtensor_notes = [t.note for e in trace.events for t in e.tensors if t.note and t.note.startswith("DTensor: ")]
    result["dtensor_notes"] = len(dtensor_notes)
    result["a_dtensor_note"] = dtensor_notes[0] if dtensor_notes else None
    result["fsdp2_grad_notes"] = sum(
        1 for e in trace.events if e.hook == "param_grad"
        and any(n.startswith("FSDP2: this rank's shard of the gradient, after the reduce-scatter") for n in e.notes))
    result["failures"] = [n for e in trace.events for n in e.notes if n.startswith("hooktui failed")] + [
        t.missing for e in trace.events for t in e.tensors if t.missing and t.missing.startswith("hooktui could not")]

    with hooktui.guard(model, max_grad_norm=1e6):
        F.mse_loss(model(x), y).backward()
    F.mse_loss(twin(x), y).backward()
    # record's param_grad of fc1's weight: this rank's reduce-scattered shard, as a plain step leaves it.
    (shown,) = [t for e in trace.events if e.hook == "param_grad" for t in e.tensors if t.target == "0.weight"]
    expected = twin[0].weight.grad.to_local()
    result["param_grad_equal_plain_shard"] = shown.shape == list(expected.shape) and torch.equal(
        torch.tensor(shown.values).reshape(expected.shape), expected)
    result["guard_grads_equal_plain"] = same(grads(model), grads(twin)) and grads(model)["2.weight"][0] == "DTensor"

    loss = hooktui.debug(model, lambda: F.mse_loss(model(x), y))
    plain = F.mse_loss(twin(x), y)
    plain.backward()
    result["debug_loss_equal_plain"] = torch.equal(loss, plain.detach())
    result["debug_grads_equal_plain"] = same(grads(model), grads(twin))
    result["params_are_shards"] = all(isinstance(p, DTensor) for p in model.parameters())

    # Every summary of hooktui's raises (inside FSDP's hooks and its reduce-scatter): the step is plain.
    describe = stats.describe
    stats.describe = raising
    try:
        loss = hooktui.debug(model, lambda: F.mse_loss(model(x), y))
    finally:
        stats.describe = describe
    plain = F.mse_loss(twin(x), y)
    plain.backward()
    result["failing_summaries_step_equal_plain"] = (torch.equal(loss, plain.detach()) and same(grads(model), grads(twin))
                                                    and same(shards(model), shards(twin)))

    fsdp1_split_grads(result, x)


if __name__ == "__main__":
    run_rank(checks)
