"""One rank of test_dist_round4.py's sharded and pipelined test: gradient accumulation under
FSDP2 (`set_requires_gradient_sync(False)`) and FSDP1 (`no_sync()`) with `record` of one
microbatch in it, beside a twin that never runs that microbatch: after the record, the twin's
`.grad` and FSDP's own accumulated gradients (FSDP2's unsharded ones, FSDP1's FlatParameter
`.grad` and `_saved_grad_shard`) and the model's are the same bit for bit, and after the
loop's next syncing microbatch their `.grad` too. Then a ScheduleGPipe pipeline (one stage
a rank, 2 microbatches) under `debug` and `record`, beside a twin schedule stepped plainly
with PyTorch's own post-accumulate-grad hooks on its parameters. Writes what it saw to the
JSON file named by argv[1]."""

import torch
from torch import nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP1
from torch.distributed.fsdp import fully_shard
from torch.distributed.pipelining import PipelineStage, ScheduleGPipe
from torch.nn import functional as F

import hooktui
from rank_main import run_rank


def small() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 1))


def fsdp2() -> nn.Module:
    model = small()
    fully_shard(model[0])
    fully_shard(model[2])
    return fully_shard(model)


def fsdp1() -> nn.Module:
    return FSDP1(small(), device_id=torch.device("cpu"))


def local(t):
    return None if t is None else (t.to_local() if hasattr(t, "to_local") else t)


def fsdp2_state(model: nn.Module) -> list:
    """.grad of each parameter (this rank's shard), and FSDP2's accumulated unsharded gradients."""
    out = [local(p.grad) for p in model.parameters()]
    for module in model.modules():
        state = getattr(module, "_get_fsdp_state", None)
        if state is None:
            continue
        for group in state()._fsdp_param_groups:
            for fsdp_param in group.fsdp_params:
                unsharded = getattr(fsdp_param, "_unsharded_param", None)
                out += [None if unsharded is None else unsharded.grad, fsdp_param.unsharded_accumulated_grad]
    return out


def fsdp1_state(model: nn.Module) -> list:
    """Each FlatParameter's .grad (sharded, or unsharded under no_sync) and its _saved_grad_shard."""
    out = []
    for module in model.modules():
        if isinstance(module, FSDP1) and module._flat_param is not None:
            flat = module._flat_param
            out += [flat.grad, getattr(flat, "_saved_grad_shard", "absent")]
    return out + [p.grad for p in model.parameters()]


def same(a: list, b: list) -> bool:
    """Bit for bit: None / "absent" where the other has it too, equal tensors of one shape and dtype."""
    def one(x, y):
        if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):
            return x == y if isinstance(x, str) and isinstance(y, str) else (x is None and y is None)
        return x.shape == y.shape and x.dtype == y.dtype and torch.equal(x, y)
    return len(a) == len(b) and all(one(x, y) for x, y in zip(a, b))


def step(model, x) -> None:
    model(x).sum().backward()


def recorded(model, x) -> bool:
    trace = hooktui.record(model, x, lambda out: out.sum())
    return trace.error is None and not trace.failed


def accumulation(result: dict, batches: list) -> None:
    a, b, c = batches
    # FSDP2, the first loop: record a no-sync microbatch, then a plain syncing one.
    model, twin = fsdp2(), fsdp2()
    model.set_requires_gradient_sync(False)
    ok = recorded(model, a)
    result["fsdp2_record_nosync_left_state"] = ok and same(fsdp2_state(model), fsdp2_state(twin))
    model.set_requires_gradient_sync(True)
    step(model, b)
    step(twin, b)
    result["fsdp2_record_nosync_then_sync"] = same(fsdp2_state(model), fsdp2_state(twin))
    # FSDP2: a plain no-sync microbatch, record a syncing one, then a plain syncing one.
    model, twin = fsdp2(), fsdp2()
    for m in (model, twin):
        m.set_requires_gradient_sync(False)
        step(m, a)
        m.set_requires_gradient_sync(True)
    ok = recorded(model, b)
    result["fsdp2_record_sync_left_state"] = ok and same(fsdp2_state(model), fsdp2_state(twin))
    step(model, c)
    step(twin, c)
    result["fsdp2_record_sync_then_sync"] = same(fsdp2_state(model), fsdp2_state(twin))

    # FSDP1: a plain no_sync() microbatch, record a syncing one (the error of the issue), a plain syncing one.
    model, twin = fsdp1(), fsdp1()
    for m in (model, twin):
        with m.no_sync():
            step(m, a)
    trace = hooktui.record(model, b, lambda out: out.sum())
    result["fsdp1_record_error"] = None if trace.error is None else trace.error.message
    result["fsdp1_record_sync_left_state"] = same(fsdp1_state(model), fsdp1_state(twin))
    step(model, c)
    step(twin, c)
    result["fsdp1_record_sync_then_sync"] = same(fsdp1_state(model), fsdp1_state(twin))
    # FSDP1: record inside no_sync() on a fresh model, then a plain syncing microbatch.
    model, twin = fsdp1(), fsdp1()
    with model.no_sync():
        ok = recorded(model, a)
    result["fsdp1_record_nosync_left_state"] = ok and same(fsdp1_state(model), fsdp1_state(twin))
    step(model, b)
    step(twin, b)
    result["fsdp1_record_nosync_then_sync"] = same(fsdp1_state(model), fsdp1_state(twin))
    # FSDP1 holding a synced step's shard in _saved_grad_shard under no_sync() (a syncing
    # backward adds to it in place): record a syncing microbatch there, then a plain one.
    model, twin = fsdp1(), fsdp1()
    for m in (model, twin):
        step(m, a)
        with m.no_sync():
            step(m, b)
    saved = [hasattr(m._flat_param, "_saved_grad_shard") for m in (model, twin)]
    ok = recorded(model, c)
    result["fsdp1_saved_shard_held"] = saved == [True, True]
    result["fsdp1_record_saved_shard_left_state"] = ok and same(fsdp1_state(model), fsdp1_state(twin))
    step(model, a)
    step(twin, a)
    result["fsdp1_record_saved_shard_then_sync"] = same(fsdp1_state(model), fsdp1_state(twin))


def stage_module(rank: int) -> nn.Module:
    torch.manual_seed(rank)
    return nn.Sequential(nn.Linear(4, 4), nn.Tanh()) if rank == 0 else nn.Sequential(nn.Linear(4, 1))


def schedule_of(rank: int):
    module = stage_module(rank)
    return module, ScheduleGPipe(PipelineStage(module, rank, 2, torch.device("cpu")), 2, loss_fn=F.mse_loss)


def pipeline(result: dict, rank: int) -> None:
    x = torch.randn(4, 4, generator=torch.Generator().manual_seed(1))
    y = torch.randn(4, 1, generator=torch.Generator().manual_seed(2))
    last = rank == 1

    def runs(schedule, losses):
        return lambda: schedule.step(target=y, losses=losses) if last else schedule.step(x)

    # The twin, plainly, with PyTorch's own hooks: .grad as each microbatch's backward left it.
    twin_module, twin = schedule_of(rank)
    fired = {name: [] for name, _ in twin_module.named_parameters()}
    handles = [p.register_post_accumulate_grad_hook(lambda p, n=name: fired[n].append(p.grad.clone()))
               for name, p in twin_module.named_parameters()]
    twin_losses: list = []
    runs(twin, twin_losses)()
    for handle in handles:
        handle.remove()
    final = {name: p.grad.clone() for name, p in twin_module.named_parameters()}

    module, schedule = schedule_of(rank)
    losses: list = []
    loss = hooktui.debug(schedule, runs(schedule, losses), losses=losses)
    if last:
        expected = torch.stack([t.detach() for t in twin_losses]).mean()
        result["pipe_debug_loss_is_mean"] = loss is not None and torch.equal(loss, expected)
        result["pipe_losses_equal_twin"] = len(losses) == 2 and all(torch.equal(a, b) for a, b in zip(losses, twin_losses))
    else:
        result["pipe_debug_loss_is_mean"] = loss is None
        result["pipe_losses_equal_twin"] = losses == []
    result["pipe_debug_grads_equal_twin"] = all(torch.equal(p.grad, final[n]) for n, p in module.named_parameters())

    trace = hooktui.record(schedule, None, step=runs(schedule, losses), losses=losses)
    result["pipe_record_error"] = None if trace.error is None else trace.error.message
    result["pipe_record_left_grads"] = all(torch.equal(p.grad, final[n]) for n, p in module.named_parameters())
    shown: dict = {}
    notes = []
    for event in trace.events:
        if event.hook in ("param_grad", "final_grad"):
            for t in event.tensors:
                shown.setdefault((event.hook, t.target), []).append(torch.tensor(t.values).reshape(t.shape))
            notes.append([event.hook, event.phase, event.notes[0]])
    result["pipe_param_grads_equal_hooks"] = all(
        len(shown.get(("param_grad", n), [])) == len(fired[n]) == 2
        and all(torch.equal(a, b) for a, b in zip(shown[("param_grad", n)], fired[n])) for n in fired)
    result["pipe_final_grads_equal_twin"] = all(
        len(shown.get(("final_grad", n), [])) == 1 and torch.equal(shown[("final_grad", n)][0], final[n]) for n in final)
    # What the schedule's scaling does, in numbers: the last param_grad is 2x the final .grad.
    result["pipe_last_is_twice_final"] = all(torch.equal(fired[n][-1] / 2, final[n]) for n in final)
    result["pipe_notes"] = notes
    result["pipe_loss_text"] = trace.info.loss
    result["pipe_phases"] = sorted({(e.hook, e.phase) for e in trace.events})


def checks(result: dict) -> None:
    rank = result["rank"]
    batches = [torch.randn(3, 4, generator=torch.Generator().manual_seed(10 * rank + i)) for i in range(3)]
    accumulation(result, batches)
    pipeline(result, rank)


if __name__ == "__main__":
    run_rank(checks)
