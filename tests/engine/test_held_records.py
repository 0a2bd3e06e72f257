"""What a held record costs (benchmarks/memory.py measures it; README says where the bytes
go): structural facts only, never a timing or a byte count. Every per-firing record is a
slotted object, and the strings that repeat on every call of a module (legacy firings'
gradient names, targets and verdicts, gradients' target labels) are one object each."""

from __future__ import annotations

import torch
from torch import nn

import hooktui


def _trace():
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Sequential(nn.Linear(6, 6), nn.GELU()) for _ in range(3)])
    return hooktui.record(model, torch.randn(3, 6), legacy=True)


def test_per_firing_records_have_no_dict():
    trace = _trace()
    for event in trace.events:
        assert not hasattr(event, "__dict__")
        for tensor in event.tensors:
            assert not hasattr(tensor, "__dict__")
            summary = getattr(tensor, "_summary", None)
            assert summary is None or not hasattr(summary, "__dict__")
        assert event.node is None or not hasattr(event.node, "__dict__")
    # A source location is shared by every firing of a module type, not made per firing.
    assert len({id(e.source) for e in trace.events}) <= len({e.module_type for e in trace.events})


def test_strings_repeated_on_every_call_are_one_object_each():
    trace = _trace()
    legacy = [e for e in trace.events if e.hook == "legacy_backward" and e.module_type == "Linear"]
    assert len(legacy) == 3
    first = legacy[0]
    assert sum(e.notes[0] == first.notes[0] for e in legacy) >= 2
    for event in legacy[1:]:
        if event.notes[0] == first.notes[0]:  # the first layer's says its input needs no grad
            assert event.notes[0] is first.notes[0]
        for tensor, twin in zip(event.tensors, first.tensors, strict=True):
            assert tensor.name is twin.name
            if tensor.target == twin.target:  # e.g. "output 0 of AddmmBackward0"; parameters differ
                assert tensor.target is twin.target
    grads = [t for e in trace.events if e.hook == "backward" and e.module_type == "Linear" for t in e.tensors]
    by_target: dict[str, set[int]] = {}
    for t in grads:
        by_target.setdefault(t.target, set()).add(id(t.target))
    assert by_target and all(len(ids) == 1 for ids in by_target.values())


def test_legacy_firings_that_say_the_same_share_their_list_of_notes():
    import copy
    import pickle

    trace = _trace()
    legacy = [e for e in trace.events if e.hook == "legacy_backward" and e.module_type == "Linear"]
    same = [e for e in legacy if e.notes == legacy[0].notes]
    assert len(same) >= 2
    assert all(e.notes is same[0].notes for e in same)
    # Shared, so it cannot be filled in place (a reader that adds a note builds a new list),
    # and a copy or a pickled trace still holds the same notes.
    try:
        same[0].notes.append("more")
    except TypeError:
        pass
    else:
        raise AssertionError("a shared list of notes was filled in place")
    assert copy.deepcopy(same[0]).notes == same[0].notes
    assert pickle.loads(pickle.dumps(same[0].to_dict()))["notes"] == list(same[0].notes)
    assert copy.deepcopy(same[0].notes) == list(same[0].notes)
