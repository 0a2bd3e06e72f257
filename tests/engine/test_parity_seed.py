"""The seed model (sample_models/seed.py) fires exactly what PyTorch's own module hooks fire.

Expectations come from plain PyTorch hooks on a second copy of the model in the same
test (plain_hooks.py), never from hooktui's output.
"""

import math

import torch

import hooktui
from plain_hooks import assert_same_as_pytorch, load_sample, plain_firings

def test_seed_sequence_grads_and_nodes_match_plain_hooks():
    seed = load_sample("seed")
    events = assert_same_as_pytorch(seed.build_model, seed.example_inputs)
    # The comparison above covers these; spelt out, they are the Stack Overflow question.
    kinds = [(e.hook, e.module) for e in events]
    assert kinds == [
        ("forward_pre", ""), ("forward_pre", "fc1"), ("forward", "fc1"), ("forward_pre", "fc2"),
        ("forward", "fc2"), ("forward", ""),
        ("backward_pre", ""), ("backward", ""), ("backward_pre", "fc2"), ("backward", "fc2"),
        ("backward_pre", "fc1"), ("backward", "fc1"),
    ]


def test_seed_grad_values_against_the_real_tensors():
    """grad_output / grad_input numbers equal the tensors PyTorch's hooks receive, and
    the analytic gradients of sum(fc2(fc1(x)))."""
    seed = load_sample("seed")
    model = seed.build_model()
    firings, _ = plain_firings(seed.build_model(), (seed.example_inputs(),))
    trace = hooktui.record(model, seed.example_inputs())
    by_key = {(e.hook, e.module): e for e in trace.events}

    # fc2's grad_input is d(sum)/d(fc1 output) = fc2.weight, broadcast to (1, 1, 5).
    fc2_in = by_key[("backward", "fc2")].tensors[0]
    assert fc2_in.shape == [1, 1, 5]
    assert fc2_in.values == model.fc2.weight.detach().reshape(-1).double().tolist()
    plain_fc2_in = next(f for f in firings if f.hook == "backward" and f.module == "fc2").tensors[0]
    assert torch.equal(plain_fc2_in.reshape(-1).double(), torch.tensor(fc2_in.values, dtype=torch.float64))
    w = model.fc2.weight.detach().double()
    assert math.isclose(fc2_in.stats.mean, w.mean().item(), rel_tol=1e-6)
    assert fc2_in.stats.min == w.min().item() and fc2_in.stats.max == w.max().item()

    # Every grad_output of the root and fc2 is 1 (d sum / d output); fc1's equals fc2's grad_input.
    assert by_key[("backward_pre", "")].tensors[0].values == [1.0]
    assert by_key[("backward_pre", "fc2")].tensors[0].values == [1.0]
    assert by_key[("backward_pre", "fc1")].tensors[0].values == fc2_in.values

    # The input is plain data: the root's and fc1's grad_input is None, and both fire early.
    for module in ("", "fc1"):
        event = by_key[("backward", module)]
        assert event.tensors[0].shape is None and event.tensors[0].missing
        assert any("early" in note for note in event.notes)
    assert not by_key[("backward", "fc2")].notes


def test_seed_grad_fn_is_the_real_node():
    seed = load_sample("seed")
    trace = hooktui.record(seed.build_model(), seed.example_inputs())
    seen = {}
    model = seed.build_model()
    handles = [m.register_forward_hook(lambda m, a, o, n=n: seen.__setitem__(n, o.grad_fn.name())) for n, m in model.named_modules()]
    model(seed.example_inputs())
    for h in handles:
        h.remove()
    assert seen == {"": "ViewBackward0", "fc1": "ViewBackward0", "fc2": "ViewBackward0"}
    assert {e.module: e.grad_fn for e in trace.events if e.hook == "forward"} == seen
    # The node record names the same node and its inputs (next_functions).
    fc1 = next(e for e in trace.events if e.hook == "forward" and e.module == "fc1")
    assert fc1.node.name == "ViewBackward0" and fc1.node.next[0].name == "AddmmBackward0"
