"""Names as in the user's model: one model recorded under DDP and under FSDP1 (one gloo
process, wrapped_worker.py) fires under the names of the plain model's modules, the raw
names kept in the trace's modules, and `diff` of the two traces aligns every firing of the
user's modules, with equal values. FSDP1's flat parameters' gradients are split back into
the named parameters."""

from __future__ import annotations

import os

import pytest

from hooktui.engine.analysis.compare import compare
from hooktui.engine.records.records import Event
from ranks import run_ranks

pytest.importorskip("torch.distributed.fsdp")


@pytest.fixture(scope="module")
def result(tmp_path_factory) -> dict:
    """The worker's one run (DDP, FSDP1, FSDP2, TP), shared by the tests below."""
    results, _ = run_ranks("wrapped_worker.py", tmp_path_factory.mktemp("wrapped"), world=1)
    return results[0]


def test_ddp_and_fsdp1_traces_carry_the_models_names_and_align(result):
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
    fsdp1_grads_split_back(result, "fsdp1")
    # use_orig_params=True: the flat parameter is no registered parameter, and the model's
    # own get their .grad from FSDP, not autograd: the flat one's firing shows them.
    fsdp1_grads_split_back(result, "fsdp1_orig")
    fsdp_modules = {name: raw for name, raw, _ in result["fsdp1"]["modules"]}
    assert fsdp_modules["2.0"] == "_fsdp_wrapped_module.2.0._fsdp_wrapped_module"

    # param_grad differs by design (FSDP1 holds one flat parameter per wrapped Linear);
    # final_grad: the test below.
    modules_firings = [e for e in events["ddp"] if e.module in plain and e.hook not in ("param_grad", "final_grad")]
    comparison = compare(events["ddp"], events["fsdp1"])
    paired = [f for f in comparison.firings if f.a is not None and f.b is not None
              and events["ddp"][f.a].module in plain and events["ddp"][f.a].hook not in ("param_grad", "final_grad")]
    assert len(modules_firings) == 28  # 7 modules, 4 hooks each
    assert len(paired) == 28
    assert not any(f.differs for f in paired)


def fsdp1_grads_split_back(result: dict, kind: str) -> None:
    """FSDP1's param_grad: one per FlatParameter, saying what it holds, split back into the
    named parameters, each equal to a plain model's .grad (one rank: no reduce-scatter)."""
    plain = result["plain_grads"]
    split = {}
    assert result[kind]["error"] is None
    for event in (Event.from_dict(e) for e in result[kind]["events"]):
        if event.hook == "param_grad":
            assert event.notes[0].startswith(f"FSDP1 FlatParameter holding {event.module}.weight")
            assert "this rank's unsharded gradient, before FSDP's reduce-scatter" in event.notes[0]
            split.update({t.target: t.values for t in event.tensors if t.target in plain})
    assert split == plain


def test_fsdp2_and_tp_hooks_are_labelled_and_not_compared_while_the_users_is(result):
    """FSDP2's forward hooks (fc 0 and the root are sharded) and TP's redistributions (0
    colwise, 3 rowwise) say what they do; the user's own hook on 3 is still compared."""
    for kind, expected in (("fsdp2", {("forward_pre", ""), ("forward", ""), ("forward_pre", "0"), ("forward", "0")}),
                           ("tp", {("forward_pre", "0"), ("forward", "0"), ("forward_pre", "3"), ("forward", "3")})):
        assert result[kind]["error"] is None
        hooks = [Event.from_dict(e) for e in result[kind]["events"] if e["hook"] == "user_hook"]
        library = [e for e in hooks if "/torch/distributed/" in e.user_hook.hook.filename.replace(os.sep, "/")]
        assert {(e.user_hook.hook.kind, e.module) for e in library} == expected
        for event in library:
            (label,) = event.user_hook.changes  # what it does, no value-by-value change
            assert label.startswith("FSDP2 " if kind == "fsdp2" else "tensor parallel (")
            assert event.notes[0].startswith(label) and "not your hook" in event.notes[0]
        if kind == "tp":
            styles = {e.module: e.user_hook.changes[0] for e in library if e.user_hook.hook.kind == "forward"}
            assert "ColwiseParallel" in styles["0"] and "RowwiseParallel" in styles["3"]
        (users,) = [e for e in hooks if e not in library]
        assert users.notes[0].startswith("your hook doubled (forward on 3)") and "output replaced" in users.notes[0]


def test_final_grad_after_the_backward_is_each_parameters_grad_by_its_own_name(result):
    """DDP and FSDP1 (both layouts): once the backward has returned, one final_grad firing
    per parameter of the user's model, under its module, equal to a plain model's .grad
    (one rank: the average is this rank's own, and FSDP1 runs NO_SHARD); DDP's and
    FSDP1's align value by value. FSDP2 and TP get none: their param_grad is the final
    .grad already."""
    plain = result["plain_grads"]
    finals = {}
    for kind, how in (("ddp", "DDP's average over the 1 rank"),
                      ("fsdp1", "the gradient averaged over the 1 rank, all of it on this rank (FSDP1, NO_SHARD)"),
                      ("fsdp1_orig", "the gradient averaged over the 1 rank, all of it on this rank (FSDP1, NO_SHARD)")):
        events = [Event.from_dict(e) for e in result[kind]["events"]]
        finals[kind] = [e for e in events if e.hook == "final_grad"]
        assert events[-len(plain):] == finals[kind]  # the step's last firings, one per parameter
        shown = {}
        for event in finals[kind]:
            (tensor,) = event.tensors
            assert event.module == tensor.target.rpartition(".")[0] and tensor.name == f"{tensor.target.rpartition('.')[2]}.grad"
            assert event.notes[0].startswith(f"the final .grad after the backward: {how}"), event.notes
            shown[tensor.target] = tensor.values
        assert shown == plain, kind
    comparison = compare(finals["ddp"], finals["fsdp1"])
    assert comparison.aligned == len(plain) and comparison.agree
    for kind in ("fsdp2", "tp"):
        assert not [e for e in result[kind]["events"] if e["hook"] == "final_grad"]
