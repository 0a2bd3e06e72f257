"""The Explain pane of a user_hook firing, and of the module firing its hook ran beside."""

from __future__ import annotations

import torch
from torch import nn

from hooktui.engine.run.session import record
from hooktui.engine.records.records import position_of
from hooktui.explain import explain
from plain_hooks import load_sample


def _texts(event, trace):
    return [(s.ok, s.text) for s in explain(event, trace.events, trace.info)]


def test_explain_of_the_users_legacy_hook_says_why_grad_input_is_1_by_5():
    sample = load_sample("seed_user_hook")
    trace = record(sample.build_model(), sample.example_inputs())
    event = next(e for e in trace.events if e.hook == "user_hook")
    texts = _texts(event, trace)
    assert texts[0][1].startswith("Your hook `printgradnorm` (legacy backward hook")
    assert "seed_user_hook.py:" in texts[0][1] and "ViewBackward0" in texts[0][1]
    assert (False, "`grad_input[0]` has shape (1, 5); `fc1`'s input args[0] has shape (1, 1, 10) ✗") in texts
    assert texts[-1] == (None, "It returned None and changed nothing: what it received goes on unchanged.")


def test_explain_of_a_module_firing_names_the_hook_that_changed_its_gradient():
    def clip_grad(module, grad_input, grad_output):
        return (grad_input[0] * 0.1,)

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2))
    model[2].register_full_backward_hook(clip_grad)
    trace = record(model, torch.ones(2, 4))
    hook = next(e for e in trace.events if e.hook == "user_hook")
    module_firing = trace.events[position_of(trace.events, hook.index) - 1]  # a position, not a number
    texts = [t for _, t in _texts(module_firing, trace)]
    mention = next(t for t in texts if t.startswith("Your hook"))
    assert f"clip_grad` at test_user_hooks_explain.py:{clip_grad.__code__.co_firstlineno} ran just after this (#{hook.index})" in mention
    assert "grad_input[0] replaced: max |Δ|" in mention
    own = [t for _, t in _texts(hook, trace)]
    assert any(t.startswith("It changed grad_input[0] replaced") for t in own)
