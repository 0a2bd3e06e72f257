"""Two processes with torch.distributed (gloo, world size 2, CPU), as torchrun starts them:
each records its step to its own trace file (the name carries the rank), only the rank
named by HOOKTUI_RANK opens the app, and DDP's gradients are those of a plain step: each
param_grad this rank's own, each final_grad the average DDP leaves in .grad."""

from __future__ import annotations

from hooktui.engine.records.trace_file import read_trace_file
from ranks import run_ranks


def test_two_ranks_each_record_and_only_hooktui_rank_opens_the_app(tmp_path):
    results, errs = run_ranks("dist_worker.py", tmp_path, env={"HOOKTUI_RANK": "1"})
    assert [r["rank"] for r in results] == [0, 1]
    assert [r["opened"] for r in results] == [False, True]  # HOOKTUI_RANK=1
    assert all(r["grads_equal_plain"] and r["grads_equal_across_ranks"] for r in results)
    assert all(r["model_freed"] for r in results)  # nothing of hooktui's holds the model (and its process group)
    for result, err in zip(results, errs):
        name = f"hooktui-{result['pid']}-1-rank{result['rank']}.jsonl"
        assert f"rank {result['rank']}: recorded the step" in err and name in err
        loaded = read_trace_file(tmp_path / name)
        assert (loaded.info.rank, loaded.info.world_size) == (result["rank"], 2)  # the header says whose step it is
        events = loaded.events
        assert {e.hook for e in events} >= {"forward", "backward", "param_grad"}
        # Each param_grad shows this rank's gradient before DDP's all-reduce, and says so.
        grads = [e for e in events if e.hook == "param_grad"]
        assert len(grads) == 4
        for event in grads:
            (shown,) = event.tensors
            assert shown.values == result["local_grads"][shown.target] != result["final_grads"][shown.target]
            assert "DDP: this rank's gradient, before DDP averages it over the 2 ranks" in event.notes[0]
        # Once the backward has returned, each parameter's final .grad: the plain DDP twin's (the average).
        finals = [e for e in events if e.hook == "final_grad"]
        assert [e.index for e in finals] == [e.index for e in events[-4:]]  # the step's last firings
        assert [t.target for e in finals for t in e.tensors] == ["0.weight", "0.bias", "2.weight", "2.bias"]
        for event in finals:
            (shown,) = event.tensors
            assert shown.values == result["plain_final_grads"][shown.target] != result["local_grads"][shown.target]
            assert event.module == shown.target.rpartition(".")[0] and event.phase == "backward"
            assert event.notes == [("the final .grad after the backward: DDP's average over the 2 ranks, what the optimizer "
                                    "uses (the param_grad firing showed this rank's own gradient)")]
    assert sorted(p.name for p in tmp_path.glob("*.jsonl")) == sorted(
        f"hooktui-{r['pid']}-1-rank{r['rank']}.jsonl" for r in results
    )
