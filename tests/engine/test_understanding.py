"""The Stack Overflow confusion: parameter-gradient firings, the legacy hook's view, stepping
into a module's autograd nodes, and the links between backward and forward firings.

Expectations come from plain PyTorch in the test: `register_backward_hook` (legacy) on a
fresh copy, `param.grad` after a plain backward, `output.grad_fn` in a plain forward hook.
"""

from __future__ import annotations

import threading
import time
import warnings

import pytest
import torch
from plain_hooks import hooks_left, load_sample
from torch import nn

import hooktui
from hooktui import Session
from hooktui.engine.summaries.stats import StatsOptions

ALL_VALUES = StatsOptions(max_values=1 << 20)


def seeded(cls, *args):
    def build():
        torch.manual_seed(0)
        return cls(*args)

    return build


def legacy_reference(model: nn.Module, inputs: torch.Tensor) -> dict[str, tuple[str, list, list]]:
    """module name -> (node name, grad_input, grad_output) as the legacy hook receives them."""
    seen: dict[str, tuple[str, list, list]] = {}
    nodes: dict[str, str] = {}
    handles = []
    for name, module in model.named_modules():
        handles.append(module.register_forward_hook(lambda m, a, out, n=name: nodes.__setitem__(n, out.grad_fn.name())))
        handles.append(
            module.register_backward_hook(
                lambda m, gi, go, n=name: seen.__setitem__(n, (nodes[n], [None if g is None else g.clone() for g in gi], [g.clone() for g in go]))
            )
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model(inputs).sum().backward()
    for h in handles:
        h.remove()
    return seen


def values(record) -> torch.Tensor:
    return torch.tensor(record.values, dtype=torch.float32).reshape(record.shape)


@pytest.mark.parametrize(
    "inputs",
    [torch.arange(10, dtype=torch.float32).reshape(1, 1, 10), torch.arange(10, dtype=torch.float32).reshape(1, 10)],
    ids=["3d-input", "2d-input"],
)
def test_seed_legacy_view_equals_register_backward_hook(inputs):
    seed = load_sample("seed")
    expected = legacy_reference(seed.build_model(), inputs)
    trace = hooktui.record(seed.build_model(), inputs, legacy=True, options=ALL_VALUES)
    legacy = {e.module: e for e in trace.events if e.hook == "legacy_backward"}
    assert set(legacy) == set(expected)
    for name, (node, grad_input, grad_output) in expected.items():
        event = legacy[name]
        assert event.grad_fn == node
        got_in = [t for t in event.tensors if t.name.startswith("grad_input")]
        got_out = [t for t in event.tensors if t.name.startswith("grad_output")]
        assert len(got_in) == len(grad_input) and len(got_out) == len(grad_output)
        for record, tensor in zip(got_in + got_out, grad_input + grad_output):
            if tensor is None:
                assert record.shape is None
            else:
                assert record.shape == list(tensor.shape)
                assert torch.allclose(values(record), tensor)


def test_seed_legacy_labels_name_what_each_gradient_is():
    seed = load_sample("seed")
    flat = torch.arange(10, dtype=torch.float32).reshape(1, 10)
    trace = hooktui.record(seed.build_model(), flat, legacy=True)
    fc1 = next(e for e in trace.events if e.hook == "legacy_backward" and e.module == "fc1")
    # Linear on a 2-D input is one addmm(bias, input, weight.T): its grads are in that order.
    assert fc1.grad_fn == "AddmmBackward0"
    targets = [t.target for t in fc1.tensors if t.name.startswith("grad_input")]
    assert targets[0] == "parameter fc1.bias"
    assert "nothing" in targets[1]  # the model's input does not require grad
    assert targets[2] == "parameter fc1.weight, transposed (through TBackward0)"
    assert "≠" in fc1.notes[0]
    fc2 = next(e for e in trace.events if e.hook == "legacy_backward" and e.module == "fc2")
    assert [t.target for t in fc2.tensors if t.name.startswith("grad_input")][1] == "the module's input args[0]"


def test_legacy_view_of_a_conv2d_equals_register_backward_hook():
    def build():
        torch.manual_seed(0)
        return nn.Sequential(nn.Conv2d(2, 3, 3), nn.Flatten())

    x = torch.randn(1, 2, 5, 5)
    expected = legacy_reference(build(), x)
    trace = hooktui.record(build(), x, legacy=True, options=ALL_VALUES)
    conv = next(e for e in trace.events if e.hook == "legacy_backward" and e.module == "0")
    node, grad_input, _ = expected["0"]
    assert conv.grad_fn == node == "ConvolutionBackward0"
    got = [t for t in conv.tensors if t.name.startswith("grad_input")]
    assert [t.shape for t in got] == [None if g is None else list(g.shape) for g in grad_input]
    assert [t.target for t in got][1:] == ["parameter 0.weight", "parameter 0.bias"]


def test_legacy_is_off_by_default_and_leaves_no_hook():
    seed = load_sample("seed")
    model = seed.build_model()
    plain = hooktui.record(model, seed.example_inputs())
    assert not any(e.hook == "legacy_backward" for e in plain.events)
    hooktui.record(model, seed.example_inputs(), legacy=True)
    assert hooks_left(model) == []


def test_param_grad_firings_carry_what_param_grad_holds():
    cnn = load_sample("cnn")
    reference = cnn.build_model()
    cnn.loss_fn(reference(cnn.example_inputs())).backward()
    expected = {name: p.grad for name, p in reference.named_parameters()}

    model = cnn.build_model()
    trace = hooktui.record(model, cnn.example_inputs(), cnn.loss_fn, options=ALL_VALUES)
    grads = [e for e in trace.events if e.hook == "param_grad"]
    assert sorted(t.target for e in grads for t in e.tensors) == sorted(expected)
    for event in grads:
        (record,) = event.tensors
        owner, _, short = record.target.rpartition(".")
        assert event.module == owner and record.name == f"{short}.grad"
        assert event.phase == "backward"
        assert torch.allclose(values(record), expected[record.target], atol=1e-6)
        forward = trace.events[event.forward_index]  # the module's (last) forward firing
        assert (forward.hook, forward.module) == ("forward", owner)
    assert all(p.grad is None for p in model.parameters())  # and the model's .grad is left alone


def test_a_module_called_twice_gets_one_param_grad_summed_over_both_calls():
    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            return self.lin(self.lin(x))

    x = torch.randn(2, 3)
    reference = seeded(Twice)()
    reference(x).sum().backward()
    trace = hooktui.record(seeded(Twice)(), x, options=ALL_VALUES)
    weight = [e for e in trace.events if e.hook == "param_grad" and e.tensors[0].target == "lin.weight"]
    assert len(weight) == 1
    assert torch.allclose(values(weight[0].tensors[0]), reference.lin.weight.grad, atol=1e-6)
    assert "calls 0..1" in weight[0].notes[0]  # both calls, named


def test_backward_firings_link_to_their_forward_call():
    rnn = load_sample("rnn")
    trace = hooktui.record(rnn.build_model(), rnn.example_inputs(), rnn.loss_fn)
    by_index = {e.index: e for e in trace.events}
    for event in trace.events:
        if event.hook in ("backward_pre", "backward"):
            forward = by_index[event.forward_index]
            assert (forward.hook, forward.module, forward.call) == ("forward", event.module, event.call)
            assert forward.source == event.source


class _Runner:
    def __init__(self, session: Session) -> None:
        self.session = session
        self.last = (-1, 0)
        self.thread = threading.Thread(target=session.run, daemon=True)
        self.thread.start()

    def paused_event(self):
        """The next firing the session pauses in (after the last one returned)."""
        deadline = time.monotonic() + 60  # a safety net
        while time.monotonic() < deadline:
            current = self.session.current
            if self.session.state == "paused" and current is not None and current.event.key > self.last:  # stepped node firings share an index (N.1, N.2)
                self.last = current.event.key
                return current.event
            if not self.thread.is_alive():
                return None
            time.sleep(0.005)
        raise AssertionError("the session did not pause")

    def step_to(self, hook: str, module: str):
        while True:
            event = self.paused_event()
            assert event is not None, f"never reached {hook} of {module}"
            if (event.hook, event.module) == (hook, module):
                return event
            self.session.step()


def _executed_nodes(model, inputs, module_name):
    """Names of the autograd nodes created inside `module_name`'s call that run in backward,
    found with plain node hooks in a plain run."""
    ran: list[str] = []
    created = {}

    def pre(m, a):
        created["start"] = torch._C._autograd._get_sequence_nr()

    def post(m, a, out):
        end = torch._C._autograd._get_sequence_nr()
        stack, seen = [out.grad_fn], set()
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen or not created["start"] <= node._sequence_nr() < end:
                continue
            seen.add(id(node))
            node.register_hook(lambda gi, go, n=node: ran.append(n.name()))
            stack.extend(n for n, _ in node.next_functions)

    module = dict(model.named_modules())[module_name]
    module.register_forward_pre_hook(pre)
    module.register_forward_hook(post)
    model(inputs).sum().backward()
    return ran


def test_step_into_a_module_backward_fires_each_of_its_nodes_then_finish():
    seed = load_sample("seed")
    inputs = seed.example_inputs()
    expected = _executed_nodes(seed.build_model(), inputs, "fc2")
    model = seed.build_model()
    session = Session(model, inputs)
    runner = _Runner(session)
    runner.step_to("backward_pre", "fc2")
    session.step_into()
    nodes = []
    while True:
        event = runner.paused_event()
        if event.hook == "backward" and event.module == "fc2":
            break
        if event.hook == "node":
            assert event.module == "fc2"
            nodes.append(event.grad_fn)
        session.step()
    assert nodes == expected  # the same nodes, in the order PyTorch ran them
    # A node firing names what each of its input gradients is.
    session.quit()
    runner.thread.join(60)
    assert not runner.thread.is_alive()
    assert hooks_left(model) == []


def test_finish_runs_to_the_module_backward():
    seed = load_sample("seed")
    session = Session(seed.build_model(), seed.example_inputs())
    runner = _Runner(session)
    runner.step_to("backward_pre", "fc2")
    session.step_into()
    first = runner.paused_event()
    assert first.hook in ("node", "node_pre", "param_grad") and first.module == "fc2"
    session.finish()
    event = runner.paused_event()
    assert (event.hook, event.module) == ("backward", "fc2")
    session.resume()
    runner.thread.join(60)
    assert session.state == "finished"
