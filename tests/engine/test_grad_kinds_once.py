"""Which gradient a param_grad firing shows (grad_kinds.py) is decided once per parameter
and run, not at every firing: a parameter no wrapper (DDP, FSDP) holds says nothing, and
that is known after its first firing."""

from __future__ import annotations

from torch import nn

from hooktui.engine.capture import grad_kinds
from hooktui.engine.capture.grad_kinds import GradKinds
from hooktui.engine.capture.model_walk import ModelWalk


def test_a_plain_parameter_is_looked_at_once(monkeypatch):
    model = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    kinds = GradKinds(ModelWalk(model).modules)
    looked: list[int] = []
    real = grad_kinds._is_flat
    monkeypatch.setattr(grad_kinds, "_is_flat", lambda p: looked.append(id(p)) or real(p))
    for _ in range(4):
        for owner, module in (("0", model[0]), ("1", model[1])):
            said, pieces = kinds.notes(module.weight, owner)
            assert list(said) == [] and list(pieces) == []
    assert sorted(looked) == sorted([id(model[0].weight), id(model[1].weight)])


def test_a_flat_parameter_is_looked_at_every_time(monkeypatch):
    """What has something to say is not cached: FSDP1's pieces are the gradient of now."""
    model = nn.Linear(3, 2)
    kinds = GradKinds(ModelWalk(model).modules)
    looked: list[int] = []
    monkeypatch.setattr(grad_kinds, "_is_flat", lambda p: looked.append(1) or True)
    monkeypatch.setattr(grad_kinds, "_flat", lambda p, owner: (["flat"], []))
    for _ in range(3):
        assert kinds.notes(model.weight, "")[0] == ["flat"]
    assert len(looked) == 3
