"""The `/` search's query language (engine/analysis/search.py) on hand-made records, and a
live Session run on to each match with `run_until` (what `n` does past the last known
firing): the stops are those PyTorch's own hooks see with a NaN, computed in the test."""

from __future__ import annotations

import pytest
import torch

from hooktui import Session
from hooktui.engine.analysis.search import parse_search
from hooktui.engine.records.records import Event, TensorRecord, TensorStats
from plain_hooks import load_sample, plain_firings


def _tensor(name, nan=0, posinf=0, neginf=0, missing=False):
    stats = TensorStats(count=4, finite=4 - nan - posinf - neginf, nan=nan, posinf=posinf, neginf=neginf)
    return TensorRecord(name=name, shape=None if missing else [4], stats=None if missing else stats)


def _event(hook="forward", module="enc.fc1", phase="forward", tensors=()):
    return Event(index=0, phase=phase, hook=hook, module=module, module_type="Linear", call=0, tensors=list(tensors))


def test_plain_words_match_module_names_as_the_filter_did():
    fc1 = _event(module="enc.fc1")
    root = _event(module="")
    assert parse_search("fc1").matches(fc1)
    assert parse_search("ENC.FC").matches(fc1)  # case does not matter
    assert parse_search("enc.*").matches(fc1) and not parse_search("dec.*").matches(fc1)
    assert parse_search("module:enc").matches(fc1) and not parse_search("fc2").matches(fc1)
    assert parse_search("(root)").matches(root) and not parse_search("(root)").matches(fc1)


def test_kind_phase_and_their_aliases():
    pre = _event(hook="backward_pre", phase="backward")
    legacy = _event(hook="legacy_backward", phase="backward")
    assert parse_search("kind:backward_pre").matches(pre)
    assert not parse_search("kind:backward").matches(pre)  # one kind, not a prefix
    assert parse_search("kind:backward*").matches(pre) and parse_search("hook:backward_pre").matches(pre)
    assert parse_search("kind:legacy_bwd").matches(legacy)  # the name the timeline shows
    assert parse_search("phase:bwd").matches(pre) and not parse_search("phase:forward").matches(pre)
    assert parse_search("kind:backward_pre fc1").matches(pre)  # every word must match
    assert not parse_search("kind:backward_pre fc2").matches(pre)


def test_tensor_names_and_values():
    event = _event(hook="backward", phase="backward",
                   tensors=[_tensor("grad_input[0]", nan=1), _tensor("grad_input[1]", missing=True), _tensor("grad_output[0]", neginf=2)])
    assert parse_search("tensor:grad_output").matches(event)
    assert parse_search("tensor:grad_input[0]").matches(event)  # brackets as written, not a glob class
    assert parse_search("tensor:grad_in*").matches(event) and not parse_search("tensor:input*").matches(event)
    assert not parse_search("tensor:grad_input[1]").matches(event)  # None: nothing to find
    assert not parse_search("tensor:output[0]x").matches(event)
    assert parse_search("nan").matches(event) and parse_search("inf").matches(event)
    assert parse_search("nonfinite").matches(event)
    clean = _event(tensors=[_tensor("output")])
    only_nan = _event(tensors=[_tensor("output", nan=3)])
    assert not any(parse_search(w).matches(clean) for w in ("nan", "inf", "nonfinite"))
    assert parse_search("nan").matches(only_nan) and not parse_search("inf").matches(only_nan)


@pytest.mark.parametrize("query, words", [
    ("", "empty"), ("   ", "empty"), ("colour:red", "unknown term 'colour:'"), ("kind:", "needs a value"),
    ("kind:sideways", "no hook kind 'sideways'"), ("phase:up", "forward (fwd) or backward (bwd)"),
])
def test_a_bad_query_says_why_in_one_line(query, words):
    with pytest.raises(ValueError) as caught:
        parse_search(query)
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_run_until_stops_at_each_match_as_pytorch_hooks_see_it():
    sample = load_sample("nan")

    def build():
        return sample.build_model()

    plain, _ = plain_firings(build(), (*_inputs(sample),), loss_fn=sample.loss_fn)
    expected = [(f.hook, f.module, f.call) for f in plain
                if f.hook.startswith("backward") and any(t is not None and torch.isnan(t).any() for t in f.tensors)]
    assert expected  # the sample's NaN reaches backward hooks

    search = parse_search("kind:backward* nan")
    session = Session(build(), _inputs(sample), sample.loss_fn, pause=False)
    stops = []

    def on_state(state):
        if state == "paused":
            event = session.trace.events[-1]
            stops.append((event.hook, event.module, event.call))
            session.run_until(search.matches)

    session.run_until(search.matches)
    session.run(on_state=on_state)
    assert stops == expected


def _inputs(sample):
    inputs = sample.example_inputs()
    return inputs if isinstance(inputs, tuple) else (inputs,)
