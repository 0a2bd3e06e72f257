"""One process (world size 1, gloo) for test_wrapper_names.py: the same model recorded
under DDP, FSDP1 (flat parameters, also with use_orig_params=True), FSDP2 and tensor parallel, each trace's firings and
modules, and a plain copy's .grad, as JSON to argv[1]. FSDP2's and TP's models also carry
a forward hook of the user's, which doubles layer 3's output."""

import torch
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
from torch.distributed.fsdp.wrap import ModuleWrapPolicy
from torch.nn.parallel import DistributedDataParallel as DDP

import hooktui
from rank_main import run_rank


def build() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 6), nn.GELU(), nn.Sequential(nn.Linear(6, 6), nn.Tanh()), nn.Linear(6, 1))


def doubled(module, args, output):
    return output * 2


def checks(result: dict) -> None:
    result["plain_names"] = [name for name, _ in build().named_modules()]
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(1))
    plain = build()
    plain(x).sum().backward()
    result["plain_grads"] = {name: p.grad.reshape(-1).tolist() for name, p in plain.named_parameters()}
    wrapped = {
        "ddp": DDP(build()),
        "fsdp1": FSDP(build(), auto_wrap_policy=ModuleWrapPolicy({nn.Linear}), device_id=torch.device("cpu")),
        "fsdp1_orig": FSDP(build(), auto_wrap_policy=ModuleWrapPolicy({nn.Linear}), device_id=torch.device("cpu"),
                           use_orig_params=True),
    }
    fsdp2 = build()
    fully_shard(fsdp2[0])
    wrapped["fsdp2"] = fully_shard(fsdp2)
    tp = build()
    wrapped["tp"] = parallelize_module(tp, init_device_mesh("cpu", (1,)), {"0": ColwiseParallel(), "3": RowwiseParallel()})
    for model in (fsdp2, tp):
        model[3].register_forward_hook(doubled)
    for kind, model in wrapped.items():
        trace = hooktui.record(model, x, lambda out: out.sum())
        result[kind] = {
            "error": None if trace.error is None else trace.error.message,
            "events": [e.to_dict() for e in trace.events],
            "modules": [[m.name, m.raw_name, m.type] for m in trace.info.modules],
        }


if __name__ == "__main__":
    run_rank(checks)
