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
names the parameter (inside FSDP1's FlatParameter) and this rank's shard (FSDP2).

DDP and tensor parallel (ColwiseParallel / RowwiseParallel, every rank the same batch) take
the same record / guard / debug steps at both widths; a NaN in one rank's weight is not
tried on them (nothing gathers it: the other rank would wait in DDP's all-reduce, or a TP
collective, for a rank that stopped). Record's forward outputs and backward grad_output /
grad_input of the three Linears equal what PyTorch's own register_forward_hook and
register_full_backward_hook hand a plain twin in its step, value by value and in the same
order, on every setup (under checkpoint_wrapper PyTorch fires the forward hook of a
checkpointed module again in the recompute, during backward; hooktui does too). And DDP's
no_sync() around the forward or around the backward only: what the param_grad and
final_grad firings say against a twin's .grad and a plain all_reduce. Writes what it saw to
the JSON file named by argv[1]."""

import contextlib
import functools

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
    checkpoint_wrapper,
)
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP1
from torch.distributed.fsdp import fully_shard
from torch.distributed.fsdp.wrap import ModuleWrapPolicy
from torch.distributed.tensor import DTensor
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    RowwiseParallel,
    parallelize_module,
)
from torch.nn import functional as F

import hooktui
from hooktui.engine.summaries.stats import device_path_forced
from hooktui.engine.summaries.stats import StatsOptions
from rank_main import run_rank

SHARDED = ("fsdp1", "fsdp1_orig", "fsdp2_ac")  # a NaN in one rank's shard is tried on these
SETUPS = (*SHARDED, "ddp", "tp")
# StatsOptions().snapshot_size is 4,096 elements: at width 8 every tensor is at most 64;
# at 96 the block's [96, 96] weight (9,216; FSDP2's shard of it [48, 96], 4,608; FSDP1's
# flat gradient of its unit 9,312; TP's RowwiseParallel shard [96, 48], 4,608) is above it.
WIDTHS = (8, 96)
BAD = "2.0.weight"  # the parameter whose rank-0 shard is given a NaN


def plain(width: int) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, width), nn.Tanh(), nn.Sequential(nn.Linear(width, width), nn.GELU()), nn.Linear(width, 1))


def build(kind: str, width: int, mesh=None) -> nn.Module:
    model = plain(width)
    if kind == "ddp":
        return nn.parallel.DistributedDataParallel(model)
    if kind == "tp":
        return parallelize_module(model, mesh, {"0": ColwiseParallel(), "2.0": RowwiseParallel()})
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


LINEARS = ("0", "2.0", "3")  # the model's Linears, by the user's names


def plain_firings(model: nn.Module) -> tuple[list, list]:
    """PyTorch's own forward and full backward hooks on the model's Linears: what they are
    handed, in order, as a list the caller fills by running a step; and their handles."""
    seen: list = []

    def forward(name, module, args, output):
        seen.append(("forward", name, [local(output)]))

    def backward(name, module, grad_input, grad_output):
        seen.append(("backward", name, [None if g is None else local(g) for g in grad_output],
                     [None if g is None else local(g) for g in grad_input]))

    handles = []
    for index, name in enumerate(LINEARS):
        layer = linear(model, index)
        handles.append(layer.register_forward_hook(functools.partial(forward, name)))
        handles.append(layer.register_full_backward_hook(functools.partial(backward, name)))
    return seen, handles


def recorded_firings(trace) -> list:
    """hooktui's firings of the same Linears, in the shape of plain_firings': a forward's
    output; a backward's grad_output (its backward_pre firing) and grad_input."""
    out, pre = [], {}
    for event in trace.events:
        if event.module not in LINEARS or not event.module_type.endswith("Linear"):
            continue
        if event.hook == "forward":
            out.append(("forward", event.module, [t for t in event.tensors if t.name == "output"]))
        elif event.hook == "backward_pre":
            pre[(event.module, event.call)] = [t for t in event.tensors if t.name.startswith("grad_output")]
        elif event.hook == "backward":
            out.append(("backward", event.module, pre.get((event.module, event.call)),
                        [t for t in event.tensors if t.name.startswith("grad_input")]))
    return out


def same_firings(plain_seen: list, recorded: list) -> bool:
    """The same firings in the same order, each tensor's values equal bit for bit (a None of
    PyTorch's: a record of a missing tensor)."""
    def equal(expected, shown) -> bool:
        if shown is None or len(expected) != len(shown):
            return False
        return all(shown_one.shape is None if one is None else block_of(shown_one, one)
                   for one, shown_one in zip(expected, shown))
    return len(plain_seen) == len(recorded) and all(
        a[:2] == b[:2] and all(equal(x, y) for x, y in zip(a[2:], b[2:])) for a, b in zip(plain_seen, recorded))


def one_setup(kind: str, width: int, rank: int, mesh) -> dict:
    out = {}
    model, twin = build(kind, width, mesh), build(kind, width, mesh)
    batch = 0 if kind == "tp" else rank  # TP: every rank the same batch; else each rank its own
    x = torch.randn(4, 4, generator=torch.Generator().manual_seed(10 + batch))
    y = torch.randn(4, 1, generator=torch.Generator().manual_seed(20 + batch))
    start, hooked = params(model), hooks(model)

    trace = hooktui.record(model, x, lambda o: F.mse_loss(o, y))
    out["record_error"] = None if trace.error is None else trace.error.message
    out["failures"] = [n for e in trace.events for n in e.notes if n.startswith("hooktui failed")]
    out["record_left_model"] = same(params(model), start) and all(p.grad is None for p in model.parameters()) and hooks(model) == hooked

    with hooktui.guard(model, max_grad_norm=1e6):
        F.mse_loss(model(x), y).backward()
    # The twin's plain step, watched by PyTorch's own module hooks (identities: its .grad
    # is a plain step's).
    seen, handles = plain_firings(twin)
    F.mse_loss(twin(x), y).backward()
    for handle in handles:
        handle.remove()
    out["guard_grads_equal_plain"] = same(grads(model), grads(twin)) and hooks(model) == hooked

    # record's firings, against plain module hooks and gradients.
    out["record_firings_equal_hooks"] = same_firings(seen, recorded_firings(trace))
    out["firings_compared"] = [f[:2] for f in seen]
    if kind.startswith("fsdp1") or kind == "ddp":
        # This rank's own gradient, before the collective, as an unwrapped copy computes it
        # on this rank's batch: DDP's, and FSDP1's flat gradient split back into BAD's part.
        alone = plain(width)
        F.mse_loss(alone(x), y).backward()
        expected = linear(alone, 1).weight.grad
        (grad,) = [t for e in trace.events if e.hook == "param_grad" for t in e.tensors
                   if t.target == BAD and bool(t.extra) is kind.startswith("fsdp1")]
    else:
        # FSDP2 and TP: this rank's shard (FSDP2's after the reduce-scatter), as the plain step leaves .grad.
        expected = linear(twin, 1).weight.grad.to_local()
        (grad,) = [t for e in trace.events if e.hook == "param_grad" for t in e.tensors if t.target == BAD]
    out["record_grad_equal_plain"] = block_of(grad, expected)
    out["record_grad_sampled"] = grad.shape is not None and torch.Size(grad.shape).numel() > StatsOptions().snapshot_size
    if kind == "ddp":  # the step's final .grad: DDP's average, as the plain DDP twin holds it
        (final,) = [t for e in trace.events if e.hook == "final_grad" for t in e.tensors if t.target == BAD]
        out["record_final_equal_plain"] = block_of(final, linear(twin, 1).weight.grad)

    model.zero_grad(set_to_none=True)
    twin.zero_grad(set_to_none=True)
    loss = hooktui.debug(model, lambda: F.mse_loss(model(x), y))
    expected_loss = F.mse_loss(twin(x), y)
    expected_loss.backward()
    out["debug_loss_equal_plain"] = torch.equal(loss, expected_loss.detach())
    out["debug_grads_equal_plain"] = same(grads(model), grads(twin)) and hooks(model) == hooked
    out["params_equal_plain"] = same(params(model), params(twin))
    if kind not in SHARDED:
        return out

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
    # On the device path (HOOKTUI_DEVICE_PATH=1, the GPU's) the guard reads its counts once,
    # as the backward returns, and raises there: the twin runs its whole steps alike.
    if not device_path_forced():
        linear(twin, 1).register_forward_hook(stop)
    for _ in range(2):
        try:
            F.mse_loss(twin(x), y).backward()
        except ValueError:
            pass
    out["nan_left_model_as_plain"] = same(params(model), params(twin))
    return out


def ddp_no_sync(around: str, rank: int) -> dict:
    """DDP decides in its forward whether the backward all-reduces (it prepares its reducer
    there, outside no_sync() only): no_sync() around the forward alone, its backward outside
    (`around="forward"`), all-reduces nothing; around the backward alone does all-reduce.
    What the plain twin's .grad holds (this rank's own gradient, or the plain all_reduce's
    average of every rank's), and what record's param_grad and final_grad firings say."""
    model, twin = build("ddp", 8), build("ddp", 8)
    x = torch.randn(4, 4, generator=torch.Generator().manual_seed(10 + rank))

    def step(ddp: nn.Module, later: contextlib.ExitStack) -> torch.Tensor:
        if around == "forward":
            with ddp.no_sync():
                return ddp(x).pow(2).mean()  # its backward runs outside
        loss = ddp(x).pow(2).mean()
        later.enter_context(ddp.no_sync())  # left once the backward has run
        return loss

    with contextlib.ExitStack() as later:
        step(twin, later).backward()
    alone = plain(8)
    alone(x).pow(2).mean().backward()
    own = linear(alone, 1).weight.grad
    average = own.clone()
    dist.all_reduce(average)
    average /= dist.get_world_size()
    held = linear(twin, 1).weight.grad
    with contextlib.ExitStack() as later:
        trace = hooktui.record(model, None, step=lambda: step(model, later))
    (param_grad,) = [e for e in trace.events if e.hook == "param_grad" and e.tensors[0].target == BAD]
    finals = [e for e in trace.events if e.hook == "final_grad" and e.tensors[0].target == BAD]
    return {"twin_holds_own": torch.equal(held, own), "twin_holds_average": torch.equal(held, average),
            "own_is_not_average": not torch.equal(own, average),
            "param_grad_own": block_of(param_grad.tensors[0], own), "param_grad_note": param_grad.notes[0],
            "final_grads": len(finals), "final_equal_twin": bool(finals) and block_of(finals[0].tensors[0], held),
            "final_note": finals[0].notes[0] if finals else None, "error": None if trace.error is None else trace.error.message}


def checks(result: dict) -> None:
    # The models are locals of one_setup() and grad_nan(), the mesh one of this function:
    # freed before the process group is destroyed (run_rank says why).
    rank = result["rank"]
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))  # tensor parallel's
    for kind in SETUPS:
        for width in WIDTHS:
            result[f"{kind}/{width}"] = one_setup(kind, width, rank, mesh)
        if kind in SHARDED:
            result[f"{kind}/grad_nan"] = grad_nan(kind, rank)
    for around in ("forward", "backward"):
        result[f"ddp/no_sync_around_{around}"] = ddp_no_sync(around, rank)


if __name__ == "__main__":
    run_rank(checks)
