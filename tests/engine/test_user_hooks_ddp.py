"""DDP on CPU (gloo, world size 1, in this process): what its hooks look like to hooktui.

DDP's reducer hooks each parameter's AccumulateGrad node from C++ (`add_post_hook`): they
are in no Python dict, so discovery finds nothing and there is no `user_hook` firing for
them; a `register_comm_hook` function is held by the C++ reducer too. What hooktui shows
instead is where those hooks run: the `param_grad` firing of each parameter (its
post-accumulate-grad hook runs at that same point, right after `.grad` is written, which is
when the reducer marks the parameter ready and, bucket full, calls the comm hook).
"""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
from torch import nn

from hooktui.engine.run.session import record
from hooktui.engine.capture.user_hooks import discover


def test_ddp_reducer_hooks_are_invisible_and_param_grads_show_where_they_run(tmp_path):
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        torch.manual_seed(0)
        model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2)))
        buckets = []

        def count_buckets(state, bucket):
            buckets.append(bucket.index())
            future = torch.futures.Future()
            future.set_result(bucket.buffer())
            return future

        model.register_comm_hook(None, count_buckets)
        x = torch.linspace(-1, 1, 8).reshape(2, 4)

        assert discover(model) == []  # the reducer's hooks live in C++
        trace = record(model, x)
        assert trace.error is None
        assert buckets, "DDP's comm hook ran under hooktui"
        assert not [e for e in trace.events if e.hook == "user_hook"]
        written = sorted(t.target for e in trace.events if e.hook == "param_grad" for t in e.tensors)
        # Named as in the user's model: without DDP's `module.`.
        assert written == sorted(name.removeprefix("module.") for name, _ in model.named_parameters())

        # The gradients hooktui showed are DDP's (averaged over one rank: the plain ones).
        model(x).sum().backward()
        shown = {t.target: t.stats.norm for e in trace.events if e.hook == "param_grad" for t in e.tensors}
        for name, param in model.named_parameters():
            assert shown[name.removeprefix("module.")] == pytest.approx(float(param.grad.norm()), rel=1e-5)

        # Each param_grad says it is this rank's gradient before the all-reduce; under
        # no_sync() (no all-reduce in that backward) that there is none.
        notes = [e.notes for e in trace.events if e.hook == "param_grad"]
        assert len(notes) == 4 and all(n[0].startswith("DDP: this rank's gradient, before DDP averages it over the 1 rank ")
                                       for n in notes)
        with model.no_sync():
            quiet = record(model, x)
        notes = [e.notes for e in quiet.events if e.hook == "param_grad"]
        assert len(notes) == 4 and all(n[0].startswith("DDP under no_sync()") for n in notes)
    finally:
        dist.destroy_process_group()
