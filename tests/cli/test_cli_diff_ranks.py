"""`hooktui diff` of rank files (issue 26): each side labelled with the rank its header
carries; three files or more say which rank parted from the others first (exit 1), or that
all agree (exit 0); a corrupted rank is one message and exit 2; a file with no rank (older,
or not distributed) still compares.

The rank files are recorded in-process, as torchrun's ranks would write them: RANK and
WORLD_SIZE set while recording (engine/records/ranks.py reads them), one model per rank, rank 2
of 3 with one weight of fc2 moved. The firing where rank 2 must part is fc2's forward (its
inputs are unchanged, its output is not), found from the model's structure, never from
the comparison.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from hooktui.cli import main
from hooktui.commands.diff_text import side_reason
from hooktui.commands.diff_ranks import name_list, pair_of
from hooktui.engine.analysis.compare_ranks import RankFiring
from hooktui.engine.run.session import record
from hooktui.engine.records.trace_file import read_trace, write_trace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import hostile  # noqa: E402
from small_models import TwoLayers

WORLD = 3


def record_rank(folder: Path, rank: int, world: int, perturbed: bool) -> Path:
    torch.manual_seed(0)
    model = TwoLayers()
    if perturbed:
        with torch.no_grad():
            model.fc2.weight[0, 1] += 1e-2
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(1))
    with pytest.MonkeyPatch.context() as env:
        env.delenv("LOCAL_RANK", raising=False)
        env.setenv("RANK", str(rank))
        env.setenv("WORLD_SIZE", str(world))
        trace = record(model, x, lambda output: output.pow(2).mean())
    path = folder / f"hooktui-1-1-rank{rank}.jsonl"
    write_trace(path, trace.info, trace.events)
    return path


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    diverging = tmp_path_factory.mktemp("diverging")
    agreeing = tmp_path_factory.mktemp("agreeing")
    files = [record_rank(diverging, r, WORLD, perturbed=r == 2) for r in range(WORLD)]
    same = [record_rank(agreeing, r, WORLD, perturbed=False) for r in range(WORLD)]
    _, events = read_trace(files[2])
    fc2 = next(e for e in events if e.hook == "forward" and e.module == "fc2")
    return {"files": files, "same": same, "index": fc2.index, "firings": len(events)}


def diff(capsys, *argv) -> tuple[int, str, str]:
    code = main(["diff", *map(str, argv)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_three_ranks_say_which_rank_diverged_first(ranks, capsys):
    code, out, err = diff(capsys, *ranks["files"])
    assert code == 1, out + err
    lines = out.splitlines()
    for r, path in enumerate(ranks["files"]):
        assert f"  rank {r}: {path} (rank {r} of {WORLD}, {ranks['firings']} firings)" in lines
    at = lines.index("rank 2 diverged first, at:")
    assert lines[at + 1] == f"  #{ranks['index']} forward forward fc2 call 0 (Linear)"
    assert lines[at + 2] == "  ranks 0, 1 agree there; rank 2 against rank 0:"
    assert lines[at + 3].startswith("    output: ") and "relative difference" in lines[at + 3]
    assert all(len(line) <= 80 for line in lines if not line.startswith(("  rank ", "  hooktui diff")))  # paths aside
    assert lines[-2:] == ["rank 2 against rank 0, module by module:", f"  hooktui diff {ranks['files'][0]} {ranks['files'][2]}"]
    table = lines[lines.index(next(line for line in lines if line.startswith("when each run parts"))) + 1:]
    assert table[:2] == ["  rank 0  never", "  rank 1  never"]
    assert table[2].startswith(f"  rank 2  first at #{ranks['index']} (")

    code, out, _ = diff(capsys, *ranks["files"], "--json")
    assert code == 1
    report = json.loads(out)
    assert report["agree"] is False
    assert [(r["name"], r["rank"], r["world_size"]) for r in report["runs"]] == [(f"rank {r}", r, WORLD) for r in range(WORLD)]
    first = report["first_difference"]
    assert (first["hook"], first["module"], first["indices"]) == ("forward", "fc2", [ranks["index"]] * WORLD)
    assert (first["diverged"], first["agree"], first["majority"]) == ([2], [0, 1], True)
    assert first["compared"]["run"] == 2 and any(t["name"] == "output" for t in first["compared"]["tensors"])
    assert [r["first_parts_at"] for r in report["runs"]] == [None, None, ranks["index"]]


def test_rank_files_given_in_any_order_are_reported_in_rank_order(ranks, capsys):
    """A shell's glob sorts hooktui-<pid>-<n>-rank<r>.jsonl by pid, not by rank."""
    code, out, _ = diff(capsys, *reversed(ranks["files"]))
    lines = out.splitlines()
    assert code == 1 and [line.split(":")[0] for line in lines[1:4]] == ["  rank 0", "  rank 1", "  rank 2"]
    assert "rank 2 diverged first, at:" in lines and "  ranks 0, 1 agree there; rank 2 against rank 0:" in lines


def test_ranks_that_agree_exit_0(ranks, capsys):
    code, out, _ = diff(capsys, *ranks["same"])
    assert code == 0
    assert "the runs agree" in out and "diverged" not in out
    code, out, _ = diff(capsys, *ranks["same"], "--json")
    assert code == 0 and json.loads(out)["agree"] is True and json.loads(out)["first_difference"] is None


def test_two_rank_files_are_labelled_with_their_ranks(ranks, capsys):
    a, _, c = ranks["files"]
    code, out, _ = diff(capsys, a, c)
    assert code == 1
    lines = out.splitlines()
    assert lines[:2] == [f"A: {a} (rank 0 of 3, {ranks['firings']} firings)", f"B: {c} (rank 2 of 3, {ranks['firings']} firings)"]
    assert any(line.startswith("first difference, where rank 0 and rank 2 part (") for line in lines)
    code, out, _ = diff(capsys, a, c, "--json")
    report = json.loads(out)
    assert (report["a"]["rank"], report["a"]["world_size"], report["b"]["rank"]) == (0, 3, 2)
    assert report["first_difference"]["index_a"] == ranks["index"]


def _header_changed(path: Path, target: Path, change) -> Path:
    header, *rest = path.read_text().splitlines(keepends=True)
    data = json.loads(header)
    change(data["info"])
    target.write_text(json.dumps(data) + "\n" + "".join(rest))
    return target


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda info: info.update(rank="two"), "header: info.rank: expected an integer"),
        (lambda info: info.update(rank=7), "header: info.rank: rank 7 of a world of 3"),
        (lambda info: info.update(world_size=-1), "header: info.world_size: expected an integer from 1"),
    ],
)
@pytest.mark.parametrize("files", [2, 3])
def test_a_corrupted_rank_is_one_message_and_exit_2(ranks, capsys, tmp_path, change, message, files):
    bad = _header_changed(ranks["files"][1], tmp_path / "bad.jsonl", change)
    argv = [ranks["files"][0], bad, ranks["files"][2]][:files]
    code, out, err = diff(capsys, *argv)
    assert code == 2 and out == ""
    assert f"{bad}:1: {message}" in err and err.count("\n") == 1 and "Traceback" not in err


def test_files_without_a_rank_still_compare(ranks, capsys, tmp_path):
    """Headers written before ranks were recorded (or by a single process) have none: the
    two-file report is as before, and several files are called A, B, C."""
    def drop(info):
        del info["rank"], info["world_size"]

    old = [_header_changed(p, tmp_path / f"old{r}.jsonl", drop) for r, p in enumerate(ranks["files"])]
    code, out, _ = diff(capsys, old[0], old[2])
    assert code == 1
    assert out.splitlines()[0] == f"A: {old[0]} ({ranks['firings']} firings)"
    assert "first difference (" in out and "part (" not in out
    code, out, _ = diff(capsys, *old)
    assert code == 1
    assert "C diverged first, at:" in out and "  A, B agree there; C against A:" in out
    report = json.loads(diff(capsys, *old, "--json")[1])
    assert [r["name"] for r in report["runs"]] == ["A", "B", "C"] and report["runs"][0]["rank"] is None


def test_record_text_is_shown_not_obeyed_with_three_files(tmp_path, capsys):
    a = hostile.write(tmp_path / "a\x1b[2J.jsonl")
    info, events = read_trace(a)
    events[1].tensors[0].stats.max += 1.0
    c = tmp_path / "c.jsonl"
    write_trace(c, info, events)
    code, out, err = diff(capsys, a, a, c)
    assert code == 1
    assert "C diverged first" in out and "\\x1b" in out
    for raw in [*hostile.RAW, b"\x1b[2J"]:
        assert raw.decode() not in out + err


def test_many_ranks_are_named_in_ranges():
    names = [f"rank {r}" for r in range(10)]
    assert name_list([0, 1], names) == "ranks 0, 1"
    assert name_list([2], names) == "rank 2"
    assert name_list([0, 1, 2, 3, 5, 7, 8, 9], names) == "ranks 0-3, 5, 7-9"
    assert name_list([0, 2], ["A", "B", "C"]) == "A, C"
    # compare.py's reasons name its sides A and B: said with the runs' names.
    assert side_reason("only in A", ("rank 2", "rank 0")) == "only in rank 2"
    assert side_reason("None in B", ("rank 2", "rank 0")) == "None in rank 0"
    assert side_reason("NaN count 0 vs 1", ("rank 2", "rank 0")) == "NaN count 0 vs 1"


def test_the_runs_shown_against_each_other_disagree():
    """A tolerance is no equivalence: 0 may agree with 1 and with 2 while 1 and 2 disagree.
    No run is then an outlier; the pair shown is one that disagrees, and the groups are
    runs that all agree with each other."""
    firing = RankFiring(("forward", "forward", "fc", 0, 0), {0: 0, 1: 0, 2: 0}, frozenset({(1, 2)}), 3)
    assert firing.outliers == [] and firing.groups() == [[0, 1], [2]]
    assert pair_of(firing) == (2, 1)
    # Five runs, 3 and 4 parted: each is shown against a run of the majority it disagrees with.
    differ = frozenset({(0, 3), (1, 3), (2, 3), (0, 4), (2, 4), (3, 4)})
    firing = RankFiring(("forward", "forward", "fc", 0, 0), dict.fromkeys(range(5), 0), differ, 5)
    assert firing.outliers == [3, 4] and firing.majority == [0, 1, 2]
    assert pair_of(firing) == (3, 0)
