"""A trace's header says which rank recorded it (engine/records/ranks.py): torch.distributed's
process group when there is one, else torchrun's RANK / WORLD_SIZE, else nothing."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from hooktui.engine.records.ranks import rank_and_world
from hooktui.engine.run.session import record

ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK")


@pytest.fixture
def env(monkeypatch):
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize(
    "given, expected",
    [
        ({}, (None, None)),
        ({"RANK": "2", "WORLD_SIZE": "3"}, (2, 3)),
        ({"RANK": "1"}, (1, None)),
        ({"LOCAL_RANK": "1", "WORLD_SIZE": "4"}, (1, None)),  # LOCAL_RANK alone: the world is not known
        ({"RANK": "3", "WORLD_SIZE": "2"}, (3, None)),  # a world size it is not below: not said
        ({"RANK": "two"}, (None, None)),  # malformed: not recorded (loop/where.py says why where it matters)
        ({"RANK": "-1"}, (None, None)),
        ({"RANK": "9" * 30}, (None, None)),  # beyond what a header may carry
        ({"RANK": "0", "WORLD_SIZE": "x"}, (None, None)),
    ],
)
def test_rank_from_the_environment(env, given, expected):
    for name, value in given.items():
        env.setenv(name, value)
    assert rank_and_world() == expected


def test_a_recorded_run_carries_its_rank(env):
    model = nn.Linear(3, 2)
    x = torch.ones(1, 3)
    assert (record(model, x).info.rank, record(model, x).info.world_size) == (None, None)
    env.setenv("RANK", "1")
    env.setenv("WORLD_SIZE", "2")
    info = record(model, x).info
    assert (info.rank, info.world_size) == (1, 2)


def test_the_process_group_wins_over_the_environment(env, tmp_path):
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("no gloo")
    env.setenv("RANK", "5")  # what the process group says is the truth
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'rendezvous'}", rank=0, world_size=1)
    try:
        assert rank_and_world() == (0, 1)
    finally:
        dist.destroy_process_group()
