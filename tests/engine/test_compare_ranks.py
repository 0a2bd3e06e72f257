"""Several runs, one per rank (engine/analysis/compare_ranks.py): the run that parts from the
majority is found at the firing where its change enters; runs that all agree agree; a
split with no majority names no outlier.

The firing each change must be found at is known from how it was made (the input, one
layer's weight, a run cut short), never from the comparison itself.
"""

from __future__ import annotations

import copy
import json

import pytest
import torch

from hooktui.engine.analysis.compare import Tolerance, keys
from hooktui.engine.analysis.compare_ranks import compare_runs, merged_order
from hooktui.engine.records.records import Event
from hooktui.engine.run.session import record
from hooktui.engine.records.trace_file import event_json
from small_models import TwoLayers


def run(change: str | None = None) -> list[Event]:
    torch.manual_seed(0)
    model = TwoLayers()
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(1))
    if change == "input":
        x[1, 2] += 1e-3
    elif change == "input twice as much":
        x[1, 2] += 2e-3
    elif change == "fc2.weight":
        with torch.no_grad():
            model.fc2.weight[0, 1] += 1e-3
    trace = record(model, x, lambda output: output.pow(2).mean())
    return [Event.from_dict(json.loads(event_json(e))) for e in trace.events]


def position_of(events, hook, module, call=0):
    return next(i for i, e in enumerate(events) if e.hook == hook and e.module == module and e.call == call)


@pytest.fixture(scope="module")
def same():
    return run()


def test_runs_that_all_agree(same):
    result = compare_runs([same, run(), run()])
    assert result.agree and result.first_difference is None and result.differing == 0
    assert result.aligned == len(same) == len(result.firings)
    assert all(result.parted(i) == [] for i in range(3))


@pytest.mark.parametrize(
    "change, hook, module",
    [
        ("input", "forward_pre", ""),  # the root's forward_pre sees the input first
        ("fc2.weight", "forward", "fc2"),  # fc2's inputs are unchanged, its output is not
    ],
)
@pytest.mark.parametrize("odd", [0, 2])
def test_the_run_that_parts_is_named_at_the_firing_where_its_change_enters(same, change, hook, module, odd):
    runs = [same, run(), run()]
    runs[odd] = run(change)
    result = compare_runs(runs)
    first = result.first_difference
    expected = position_of(runs[odd], hook, module)
    assert first.positions == {0: expected, 1: expected, 2: expected}
    assert first.outliers == [odd] and first.majority == [r for r in range(3) if r != odd]
    # Every firing before it agrees; the others never part from the majority.
    assert all(f.agree for f in result.firings[: result.firings.index(first)])
    assert result.parted(odd)[0] is first
    assert all(result.parted(r) == [] for r in range(3) if r != odd)
    # The odd run against one of the majority: the tensors that differ, as compare.py says.
    pair = result.pair(first, odd, first.majority[0])
    assert pair.differs and (pair.a, pair.b) == (expected, expected)
    # A tolerance wider than the change: all agree.
    assert compare_runs(runs, Tolerance(rtol=0.05, atol=1e-4)).agree


def test_a_run_cut_short_parts_where_its_firings_end(same):
    short = copy.deepcopy(same)[:7]
    result = compare_runs([same, run(), short])
    first = result.first_difference
    assert first.positions == {0: 7, 1: 7}
    assert first.outliers == [2] and first.majority == [0, 1]
    assert len(result.parted(2)) == len(same) - 7 and result.aligned == 7
    pair = result.pair(first, 2, 0)
    assert (pair.a, pair.b) == (None, 7)


def test_two_against_two_is_a_split_without_a_majority(same):
    changed = run("fc2.weight")
    result = compare_runs([same, changed, run(), copy.deepcopy(changed)])
    first = result.first_difference
    assert first.positions[0] == position_of(same, "forward", "fc2")
    assert first.outliers == [] and first.majority == []
    assert first.groups() == [[0, 2], [1, 3]]
    assert all(result.parted(r) == [] for r in range(4))
    # Every run different from every other: no majority either, each run its own group.
    result = compare_runs([same, run("input"), run("input twice as much")])
    assert result.first_difference.positions[0] == position_of(same, "forward_pre", "")
    assert result.first_difference.outliers == [] and result.first_difference.groups() == [[0], [1], [2]]


def test_firings_only_some_runs_have_are_placed_where_they_happened(same):
    extra = position_of(same, "forward", "act")
    fewer = copy.deepcopy(same)
    del fewer[extra]
    result = compare_runs([fewer, same, copy.deepcopy(same)])
    assert [f.key for f in result.firings] == keys(same)  # act's forward placed back where it fired
    first = result.first_difference
    assert first.positions == {1: extra, 2: extra} and first.outliers == [0]


def test_merged_order():
    assert merged_order([["a", "c"], ["a", "b", "c", "d"], ["x", "a"]]) == ["x", "a", "b", "c", "d"]
    assert merged_order([["a", "b"], ["b", "a"]]) == ["a", "b"]
    assert merged_order([]) == []
