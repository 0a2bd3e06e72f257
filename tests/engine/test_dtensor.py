"""DTensors (gloo, world size 1, in this process) are summarised from this rank's local part,
with no collective, and say what they are a part of (engine/summaries/sharded.py)."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
from torch import nn

import hooktui
from hooktui.engine.summaries import stats
from hooktui.engine.run.session import record

tensor_api = pytest.importorskip("torch.distributed.tensor")
DTensor, Shard, Replicate, Partial = tensor_api.DTensor, tensor_api.Shard, tensor_api.Replicate, tensor_api.Partial
from torch.distributed.device_mesh import init_device_mesh  # noqa: E402
from torch.distributed.tensor import _redistribute  # noqa: E402

PLACEMENTS = {"shard": Shard(0), "replicate": Replicate(), "partial": Partial()}


@pytest.fixture
def mesh(tmp_path):
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        yield init_device_mesh("cpu", (1,))
    finally:
        dist.destroy_process_group()


class Scale(nn.Module):
    def forward(self, x):
        return x * 3  # a DTensor keeps its placements (Partial too: scaling is linear)


def _no_redistribution(monkeypatch) -> None:
    """Every collective a DTensor issues goes through redistribute_local_tensor: forbidden."""

    def refuse(*_args, **_kwargs):
        raise AssertionError("hooktui redistributed a DTensor (a collective)")

    monkeypatch.setattr(_redistribute, "redistribute_local_tensor", refuse)


@pytest.mark.parametrize("placement", sorted(PLACEMENTS))
@pytest.mark.parametrize("numel", [12, 6000])  # under and over the snapshot size (as_strided there)
def test_a_dtensor_is_summarised_from_its_local_part_with_no_collective(mesh, monkeypatch, placement, numel):
    local = torch.linspace(-2, 3, numel).reshape(-1, 4 if numel == 12 else 40)
    local[0, 1] = float("nan")
    tensor = DTensor.from_local(local, mesh, [PLACEMENTS[placement]])
    _no_redistribution(monkeypatch)
    r = stats.describe("x", tensor)
    expected = local[~torch.isnan(local)].double()
    assert r.shape == list(local.shape)
    assert r.stats.nan == 1 and r.stats.count == numel
    assert r.stats.min == pytest.approx(float(expected.min())) and r.stats.max == pytest.approx(float(expected.max()))
    assert r.stats.norm == pytest.approx(float(expected.norm()), rel=1e-6)
    kept = torch.tensor(r.values, dtype=torch.float64)
    block = local[tuple(slice(0, k) for k in r.values_shape)].double().reshape(-1)
    assert torch.equal(torch.nan_to_num(kept, nan=7.0), torch.nan_to_num(block, nan=7.0))
    assert r.note.startswith(f"DTensor: statistics and values are this rank's local part, shape {list(local.shape)}, "
                             f"of a global {list(local.shape)}; placements ({_text(placement)}) on mesh (1,) on cpu")
    assert ("these values are partial" in r.note) == (placement == "partial")


def _text(placement: str) -> str:
    return {"shard": "Shard(0)", "replicate": "Replicate()", "partial": "Partial(sum)"}[placement]


@pytest.mark.parametrize("placement", sorted(PLACEMENTS))
def test_dtensors_through_a_module_are_recorded_as_plain_hooks_see_their_local_parts(mesh, placement):
    model = Scale()
    seen = {}
    handles = [
        model.register_forward_hook(lambda m, a, out: seen.__setitem__("output", out.to_local().detach().clone())),
        model.register_full_backward_pre_hook(lambda m, g: seen.__setitem__("grad_output", g[0].to_local().clone())),
    ]
    x = DTensor.from_local(torch.linspace(-1, 1, 8).reshape(2, 4), mesh, [PLACEMENTS[placement]]).requires_grad_()
    weights = torch.arange(8.0).reshape(2, 4)
    trace = record(model, x, lambda out: (out.to_local() * weights).sum())
    for handle in handles:
        handle.remove()
    assert trace.error is None, trace.error
    (forward,) = [e for e in trace.events if e.hook == "forward"]
    (out,) = [t for t in forward.tensors if t.name == "output"]
    assert torch.equal(torch.tensor(out.values).reshape(2, 4), seen["output"])
    assert "placements (" + _text(placement) + ")" in out.note
    (backward_pre,) = [e for e in trace.events if e.hook == "backward_pre"]
    (grad,) = backward_pre.tensors
    assert torch.equal(torch.tensor(grad.values).reshape(2, 4), seen["grad_output"])
    assert grad.note.startswith("DTensor: ")


def test_a_users_hook_that_returns_a_dtensor_for_a_tensor_is_compared_by_local_parts(mesh):
    """What tensor parallel's input hook does: a plain input replaced by a DTensor."""
    model = Scale()
    model.register_forward_pre_hook(lambda m, args: (DTensor.from_local(args[0] + 1, mesh, [Replicate()]),))
    x = torch.ones(2, 4, requires_grad=True)
    trace = record(model, x, lambda out: out.to_local().sum())
    assert trace.error is None, trace.error
    (fired,) = [e for e in trace.events if e.hook == "user_hook"]
    assert fired.user_hook.changes[0].startswith(
        "args[0] replaced: max |Δ| 1 (this rank's local parts: a tensor → a DTensor (Replicate()) of [2, 4])")
    assert torch.equal(trace.output.to_local(), torch.full((2, 4), 6.0))  # the hook took effect


def test_a_guard_hunting_through_dtensors_runs_the_step_as_plain(mesh):
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    twin = nn.Linear(4, 3)
    twin.load_state_dict(model.state_dict())
    x = torch.linspace(-1, 1, 8).reshape(2, 4)
    for m in (model, twin):
        for name, p in list(m.named_parameters()):
            setattr(m, name, nn.Parameter(DTensor.from_local(p.detach().clone(), mesh, [Replicate()])))
    with hooktui.guard(model):
        model(DTensor.from_local(x, mesh, [Replicate()])).to_local().sum().backward()
    twin(DTensor.from_local(x, mesh, [Replicate()])).to_local().sum().backward()
    for (name, p), (_, q) in zip(model.named_parameters(), twin.named_parameters()):
        assert isinstance(p, DTensor) and isinstance(p.grad, DTensor), name
        assert torch.equal(p.grad.to_local(), q.grad.to_local()), name


@pytest.mark.parametrize("placement", sorted(PLACEMENTS))
def test_a_users_hook_that_takes_a_dtensors_local_part_says_so(mesh, placement):
    """What tensor parallel's output hooks do: a DTensor output replaced by a plain tensor."""
    model = Scale()
    model.register_forward_hook(lambda m, args, out: out.to_local())
    x = DTensor.from_local(torch.ones(2, 4), mesh, [PLACEMENTS[placement]]).requires_grad_()
    trace = record(model, x, lambda out: out.sum())
    assert trace.error is None, trace.error
    (fired,) = [e for e in trace.events if e.hook == "user_hook"]
    dtensor = f"a DTensor ({_text(placement)}) of [2, 4]"
    if placement == "partial":
        assert fired.user_hook.changes == [f"output replaced: {dtensor} → a tensor (not compared value by value: partial "
                                           "sums on one side only, and the other ranks' parts are not here)"]
    else:
        assert fired.user_hook.changes == [f"output: returned a new tensor with the same values (this rank's local parts: "
                                           f"{dtensor} → a tensor)"]
