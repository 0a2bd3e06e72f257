"""Watch expressions (engine/analysis/watch.py) at every firing of a live Session: values
against plain PyTorch hooks in the test, names that a firing does not have, errors, and
a watch that must not change the run (no graph, RNG as it was, in-place changes said)."""

import torch
from torch import nn

from hooktui import Session
from hooktui.engine.analysis.breakpoints import Breakpoint
from hooktui.engine.analysis.watch import ABSENT, ERROR, OK, evaluate_watches


def _model(dropout: float = 0.0):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Dropout(dropout), nn.Linear(4, 2))


def _x():
    return torch.randn(5, 3, generator=torch.Generator().manual_seed(1))


def watched_run(model, x, expressions, loss_fn=None):
    """Run `model` pausing at every firing (a condition that is always true), with the
    watches evaluated there as the app does; [(event, [WatchValue])]."""
    session = Session(model, x, loss_fn, pause=False)
    session.add_breakpoint(Breakpoint.condition("True"))
    session.gate.resume()
    seen = []

    def on_state(state):
        if state == "paused":
            live = session.current
            seen.append((live.event, evaluate_watches(expressions, live.event, live, run_names={"model": model})))
            session.gate.resume()

    session.run(on_state=on_state)
    watched_run.session = session
    return seen


def _plain(model, x):
    """From PyTorch's own hooks: output.mean() per forward call, grad_output[0].norm() per
    backward call, by module name, in firing order."""
    forward, backward = [], []
    handles = []
    for name, m in model.named_modules():
        handles.append(m.register_forward_hook(lambda m, a, out, n=name: forward.append((n, out.detach().mean().item()))))
        handles.append(m.register_full_backward_hook(lambda m, gi, go, n=name: backward.append((n, go[0].norm().item()))))
    model(x).sum().backward()
    for h in handles:
        h.remove()
    return forward, backward


def _number(text: str) -> float:
    return float(text.split()[0])


def test_watches_are_evaluated_at_every_firing_as_plain_hooks_see_it():
    model, x = _model(), _x()
    expected_forward, expected_backward = _plain(_model(), _x())
    seen = watched_run(model, x, ["output.mean()", "grad_output[0].norm()", "module.weight.abs().max()"])
    forward = [(e.module, _number(w[0].text)) for e, w in seen if e.hook == "forward"]
    backward = [(e.module, _number(w[1].text)) for e, w in seen if e.hook == "backward"]
    assert [n for n, _ in forward] == [n for n, _ in expected_forward]
    for (_, got), (_, want) in zip(forward, expected_forward):
        assert abs(got - want) <= 1e-5 * max(1.0, abs(want))
    assert [n for n, _ in backward] == [n for n, _ in expected_backward]
    for (_, got), (_, want) in zip(backward, expected_backward):
        assert abs(got - want) <= 1e-5 * max(1.0, abs(want))
    # The weight watch: a number at a Linear, the exception's one line at the Dropout and the root.
    by_module = {e.module: w[2] for e, w in seen if e.hook == "forward"}
    assert by_module["0"].kind == OK and abs(_number(by_module["0"].text) - model[0].weight.abs().max().item()) < 1e-6
    assert by_module["1"].kind == ERROR and by_module["1"].text.startswith("AttributeError: ")
    # A name the firing does not have is said, not raised.
    pre = next(w for e, w in seen if e.hook == "forward_pre")
    assert pre[0].kind == ABSENT and pre[0].text == "no output at a forward_pre firing"
    assert pre[1].kind == ABSENT and "grad_output" in pre[1].text


def test_a_watch_never_changes_the_run():
    """A watch that draws random numbers, reads outputs and grads, at every firing: the
    gradients are those of a run without watches (the dropout masks are the same)."""
    x = _x()
    plain = _model(0.5)
    torch.manual_seed(7)
    plain(x).sum().backward()
    model = _model(0.5)
    torch.manual_seed(7)
    seen = watched_run(model, x, ["torch.rand(3).sum()", "output.sum()", "torch.is_grad_enabled()"],
                       loss_fn=lambda out: out.sum())
    assert seen
    grads = watched_run.session.final_grads
    assert set(grads) == {name for name, _ in plain.named_parameters()}
    for name, p in plain.named_parameters():
        assert torch.equal(p.grad, grads[name]), name
    assert {w[2].text for _, w in seen} == {"False"}  # evaluated under no_grad


def test_a_watch_that_changes_a_tensor_in_place_is_said():
    seen = watched_run(_model(), _x(), ["grad_output[0].mul_(1)", "x = 1", "1/0", "exit(3)"])
    backward = next(w for e, w in seen if (e.hook, e.module) == ("backward", "0"))
    assert backward[0].kind == ERROR and backward[0].text.startswith("changed grad_output[0] in place")
    assert backward[1].kind == ERROR and backward[1].text.startswith("SyntaxError")
    assert backward[2].kind == ERROR and backward[2].text == "ZeroDivisionError: division by zero"
    assert backward[3].kind == ERROR and backward[3].text == "SystemExit: 3"  # the app goes on


def test_a_recorded_firing_has_only_its_records():
    seen = watched_run(_model(), _x(), [])
    event = next(e for e, _ in seen if e.hook == "backward")
    values = evaluate_watches(["grad_output[0].norm()", "event.module", "len(tensors)"], event)
    assert values[0].kind == ABSENT and values[0].text == "no grad_output: a recorded trace has no live objects"
    assert values[1].text == repr(event.module)
    assert values[2].text == str(len(event.tensors))
    past = evaluate_watches(["module"], event, past=True)
    assert past[0].kind == ABSENT and "past firing" in past[0].text


def test_a_hook_a_watch_registers_is_removed_again():
    """A watch that registers hooks at every firing (on the module; on its output, one that
    would zero the gradient): each is taken out again and said; the run's gradients are
    those of a plain run."""
    x = _x()
    plain = _model()
    plain(x).sum().backward()
    model = _model()
    calls = []
    seen = watched_run(model, x, ["module.register_forward_hook(lambda *a: calls.append(1))",
                                  "output.register_hook(lambda g: g * 0)"],
                       loss_fn=lambda out: out.sum())
    module_hook = next(w[0] for e, w in seen if (e.hook, e.module) == ("forward_pre", "0"))
    tensor_hook = next(w[1] for e, w in seen if (e.hook, e.module) == ("forward", "0"))
    assert module_hook.kind == ERROR and module_hook.text.startswith("registered 1 hook: removed again")
    assert tensor_hook.kind == ERROR and tensor_hook.text.startswith("registered 1 hook: removed again")
    assert all(not m._forward_hooks for m in model.modules())
    grads = watched_run.session.final_grads
    for name, p in plain.named_parameters():
        assert torch.equal(p.grad, grads[name]), name
