"""Names as in the user's model: one model recorded under DDP and under FSDP1 (one gloo
process, wrapped_worker.py) fires under the names of the plain model's modules, the raw
names kept in the trace's modules, and `diff` of the two traces aligns every firing of the
user's modules, with equal values. FSDP1's flat parameters' gradients are split back into
the named parameters."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hooktui.engine.compare import compare
from hooktui.engine.records import Event
from test_distributed import _free_port

pytest.importorskip("torch.distributed.fsdp")
HERE = Path(__file__).resolve().parent


def test_ddp_and_fsdp1_traces_carry_the_models_names_and_align(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update({"WORLD_SIZE": "1", "RANK": "0", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(_free_port()), "HOOKTUI_DIR": str(tmp_path), "PYTHONPATH": str(HERE.parents[1])})
    done = subprocess.run([sys.executable, str(HERE / "wrapped_worker.py"), str(tmp_path / "result.json")],
                          env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "result.json").read_text())
    plain = set(result["plain_names"])
    events = {}
    for kind, wrapper in (("ddp", "DistributedDataParallel"), ("fsdp1", "FullyShardedDataParallel")):
        assert result[kind]["error"] is None
        events[kind] = [Event.from_dict(e) for e in result[kind]["events"]]
        users = {e.module for e in events[kind] if e.module_type != wrapper}
        assert users == plain  # every module of the user's fires, by its own name
        assert all(e.module.endswith(f"[{wrapper}]") for e in events[kind] if e.module_type == wrapper)
    ddp_modules = {name: raw for name, raw, _ in result["ddp"]["modules"]}
    assert ddp_modules["2.0"] == "module.2.0" and ddp_modules["[DistributedDataParallel]"] == ""
    fsdp1_grads_split_back(result)
    fsdp_modules = {name: raw for name, raw, _ in result["fsdp1"]["modules"]}
    assert fsdp_modules["2.0"] == "_fsdp_wrapped_module.2.0._fsdp_wrapped_module"

    # param_grad differs by design (FSDP1 holds one flat parameter per wrapped Linear).
    modules_firings = [e for e in events["ddp"] if e.module in plain and e.hook != "param_grad"]
    comparison = compare(events["ddp"], events["fsdp1"])
    paired = [f for f in comparison.firings if f.a is not None and f.b is not None
              and events["ddp"][f.a].module in plain and events["ddp"][f.a].hook != "param_grad"]
    assert len(modules_firings) == 28  # 7 modules, 4 hooks each
    assert len(paired) == 28
    assert not any(f.differs for f in paired)


def fsdp1_grads_split_back(result: dict) -> None:
    """FSDP1's param_grad: one per FlatParameter, saying what it holds, split back into the
    named parameters, each equal to a plain model's .grad (one rank: no reduce-scatter)."""
    plain = result["plain_grads"]
    split = {}
    for event in (Event.from_dict(e) for e in result["fsdp1"]["events"]):
        if event.hook == "param_grad":
            assert event.notes[0].startswith(f"FSDP1 FlatParameter holding {event.module}.weight")
            assert "this rank's unsharded gradient, before FSDP's reduce-scatter" in event.notes[0]
            split.update({t.target: t.values for t in event.tensors if t.target in plain})
    assert split == plain
