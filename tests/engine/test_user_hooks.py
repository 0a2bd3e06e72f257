"""The model's own hooks as `user_hook` firings, checked against a run without hooktui.

Each case builds the same seeded model twice with the same hooks. The hooks write down
what they received and returned (`Log`); the plain run is forward + backward with nothing
but PyTorch, the other is `record()`. The two logs must be equal (wrapping changes
nothing a hook sees or does), the parameters' gradients must be equal, every hook dict
must hold the original function afterwards, and each user_hook firing must report what
the plain run's hook saw, with changes computed here from the plain run's tensors.
"""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn
from torch.nn.modules import module as module_globals

from hooktui.engine.run.session import record
from small_models import Two

warnings.filterwarnings("ignore", message=".*non-full backward hook.*")
warnings.filterwarnings("ignore", category=FutureWarning)


class Log:
    """What hooks received and returned, in call order: (hook name, [(slot, tensor clone)], returned)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[tuple[str, torch.Tensor | None]], list[torch.Tensor | None] | None]] = []

    def add(self, name: str, received: dict, returned=None) -> None:
        snap = [(k, None if v is None else v.detach().clone()) for k, v in received.items()]
        ret = None if returned is None else [None if r is None else r.detach().clone() for r in _flat(returned)]
        self.calls.append((name, snap, ret))


def _flat(value):
    if isinstance(value, torch.Tensor) or value is None:
        return [value]
    return [t for v in value for t in _flat(v)]


def assert_logs_equal(plain: Log, traced: Log) -> None:
    assert [c[0] for c in plain.calls] == [c[0] for c in traced.calls]
    for (name, got_a, ret_a), (_, got_b, ret_b) in zip(plain.calls, traced.calls):
        assert [k for k, _ in got_a] == [k for k, _ in got_b], name
        for (k, a), (_, b) in zip(got_a, got_b):
            assert (a is None) == (b is None), (name, k)
            if a is not None:
                assert torch.equal(a, b), (name, k)
        assert (ret_a is None) == (ret_b is None), name
        for a, b in zip(ret_a or [], ret_b or []):
            assert a is None and b is None or torch.equal(a, b), name


def _inputs():
    return torch.linspace(-1, 1, 8).reshape(2, 4)


def run_both(build, install, inputs=_inputs):
    """install(model, log) -> list of (hook dict, key, original fn) to check afterwards."""
    torch.manual_seed(0)
    plain_model, plain_log = build(), Log()
    install(plain_model, plain_log)
    plain_model(inputs()).sum().backward()
    plain_grads = {n: p.grad.clone() for n, p in plain_model.named_parameters()}

    torch.manual_seed(0)
    model, log = build(), Log()
    slots = install(model, log)
    trace = record(model, inputs())
    assert trace.error is None, trace.error
    assert_logs_equal(plain_log, log)
    for dict_, key, fn in slots or []:
        assert dict_[key] is fn  # the original, not a wrapper
    # hooktui leaves .grad as it found it; run once more plainly and compare the gradients.
    model(inputs()).sum().backward()
    for n, p in model.named_parameters():
        assert torch.equal(p.grad, plain_grads[n]), n
    return trace, plain_log


def user_events(trace, function: str | None = None):
    return [e for e in trace.events if e.hook == "user_hook" and (function is None or e.user_hook.hook.function.endswith(function))]


def record_named(event, name):
    return next(t for t in event.tensors if t.name == name)


def norm_of(t: torch.Tensor) -> float:
    return float(t.double().norm())


# -- module hooks ------------------------------------------------------------------------
def test_forward_pre_hook_that_doubles_its_argument():
    def double_input(module, args):
        out = (args[0] * 2,)
        LOG.add("pre", {"args[0]": args[0]}, out)
        return out

    def install(model, log):
        global LOG
        LOG = log
        handle = model.fc1.register_forward_pre_hook(double_input)
        return [(model.fc1._forward_pre_hooks, handle.id, double_input)]

    trace, plain = run_both(Two, install)
    (event,) = user_events(trace, "double_input")
    (_, got, ret) = plain.calls[0]
    assert event.module == "fc1" and event.phase == "forward"
    assert event.user_hook.hook.kind == "forward_pre" and event.user_hook.returned == "replaced"
    assert record_named(event, "args[0]").shape == list(got[0][1].shape)
    assert record_named(event, "args[0]").stats.norm == pytest.approx(norm_of(got[0][1]), rel=1e-5)
    diff = float((ret[0] - got[0][1]).abs().max())
    (change,) = event.user_hook.changes
    assert change.startswith("args[0] replaced") and f"{diff:.4g}" in change
    # It fired before hooktui's own forward_pre firing of the call it changed, source = its def line.
    forward_pre = next(e for e in trace.events if e.module == "fc1" and e.hook == "forward_pre")
    assert event.index < forward_pre.index
    assert event.source.lineno == double_input.__code__.co_firstlineno
    assert record_named(forward_pre, "args[0]").stats.norm == pytest.approx(norm_of(ret[0]), rel=1e-5)


def test_forward_hook_with_kwargs_and_always_call_flags():
    def shift_output(module, args, kwargs, output):
        new = output + 1
        LOG.add("fwd", {"args[0]": args[0], "output": output}, new)
        return new

    def install(model, log):
        global LOG
        LOG = log
        handle = model.fc2.register_forward_hook(shift_output, with_kwargs=True, always_call=True)
        return [(model.fc2._forward_hooks, handle.id, shift_output)]

    trace, plain = run_both(Two, install)
    (event,) = user_events(trace, "shift_output")
    assert event.user_hook.hook.flags == ["with_kwargs", "always_call"]
    (_, got, ret) = plain.calls[0]
    assert [t.name for t in event.tensors] == ["args[0]", "output", "returned output"]
    assert record_named(event, "returned output").stats.norm == pytest.approx(norm_of(ret[0]), rel=1e-5)
    assert "max |Δ| 1" in event.user_hook.changes[0]


def test_full_backward_pre_hook_and_full_backward_hook_that_scales_grad_input():
    def pre_seen(module, grad_output):
        LOG.add("bpre", {"grad_output[0]": grad_output[0]})

    def clip_grad(module, grad_input, grad_output):
        new = (grad_input[0] * 0.1,)
        LOG.add("bwd", {"grad_input[0]": grad_input[0], "grad_output[0]": grad_output[0]}, new)
        return new

    def install(model, log):
        global LOG
        LOG = log
        a = model.fc2.register_full_backward_pre_hook(pre_seen)
        b = model.fc2.register_full_backward_hook(clip_grad)
        return [(model.fc2._backward_pre_hooks, a.id, pre_seen), (model.fc2._backward_hooks, b.id, clip_grad)]

    trace, plain = run_both(Two, install)
    (pre,) = user_events(trace, "pre_seen")
    (clip,) = user_events(trace, "clip_grad")
    assert pre.index < clip.index and pre.phase == clip.phase == "backward"
    assert pre.user_hook.returned == "None" and pre.user_hook.changes == []
    got = dict(plain.calls[1][1])
    assert record_named(clip, "grad_input[0]").stats.norm == pytest.approx(norm_of(got["grad_input[0]"]), rel=1e-5)
    assert clip.user_hook.hook.kind == "full_backward"
    diff = float((got["grad_input[0]"] * 0.9).abs().max())
    assert clip.user_hook.changes == [
        f"grad_input[0] replaced: max |Δ| {diff:.4g}, norm {norm_of(got['grad_input[0]']):.4g} → {norm_of(got['grad_input[0]'] * 0.1):.4g}"
    ]


def test_engine_capture_works_on_a_module_with_the_users_full_backward_hook():
    """The user's full backward hook wraps fc1's outputs in BackwardHookFunction: hooktui's
    own backward firing of fc1 must still carry what PyTorch hands that hook."""

    def seen(module, grad_input, grad_output):
        LOG.add("full", {"grad_input[0]": grad_input[0], "grad_output[0]": grad_output[0]})

    def install(model, log):
        global LOG
        LOG = log
        model.fc1.register_full_backward_hook(seen)

    def leaf_inputs():
        return _inputs().requires_grad_()

    trace, plain = run_both(Two, install, leaf_inputs)
    got = dict(plain.calls[0][1])
    backward = next(e for e in trace.events if e.module == "fc1" and e.hook == "backward")
    backward_pre = next(e for e in trace.events if e.module == "fc1" and e.hook == "backward_pre")
    assert record_named(backward, "grad_input[0]").stats.norm == pytest.approx(norm_of(got["grad_input[0]"]), rel=1e-5)
    assert record_named(backward_pre, "grad_output[0]").stats.norm == pytest.approx(norm_of(got["grad_output[0]"]), rel=1e-5)


def test_legacy_backward_hook_of_the_stack_overflow_model_gets_1_by_5():
    def printgradnorm(self, grad_input, grad_output):
        LOG.add("legacy", {f"grad_input[{i}]": g for i, g in enumerate(grad_input)})

    class Seed(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(10, 5)
            self.fc2 = nn.Linear(5, 1)

        def forward(self, x):
            return self.fc2(self.fc1(x))

    def install(model, log):
        global LOG
        LOG = log
        handle = model.fc1.register_backward_hook(printgradnorm)
        return [(model.fc1._backward_hooks, handle.id, printgradnorm)]

    trace, plain = run_both(Seed, install, lambda: torch.arange(10, dtype=torch.float32).reshape(1, 1, 10))
    (event,) = user_events(trace, "printgradnorm")
    assert event.user_hook.hook.kind == "legacy_backward" and event.module == "fc1"
    shapes = [list(t.shape) for _, t in plain.calls[0][1]]
    assert shapes == [[1, 5]]  # what PyTorch 2.13 hands it, with no hooktui
    assert [t.shape for t in event.tensors if t.name.startswith("grad_input")] == shapes


def test_global_forward_hook_fires_for_every_module():
    def everywhere(module, args, output):
        LOG.add(type(module).__name__, {"output": output})

    def install(model, log):
        global LOG
        LOG = log
        while HANDLES:  # the plain run's, so that only one is there for each run
            HANDLES.pop().remove()
        HANDLES.append(nn.modules.module.register_module_forward_hook(everywhere))
        return [(module_globals._global_forward_hooks, HANDLES[-1].id, everywhere)]

    HANDLES: list = []
    try:
        trace, plain = run_both(Two, install)
    finally:
        for handle in HANDLES:
            handle.remove()
    events = user_events(trace, "everywhere")
    assert [e.module_type for e in events] == [name for name, _, _ in plain.calls] == ["Linear", "Linear", "Two"]
    assert [e.module for e in events] == ["fc1", "fc2", ""]
    assert all(e.user_hook.hook.kind == "global_forward" and e.user_hook.hook.owner == "global" for e in events)
    assert not module_globals._global_forward_hooks


class GradReversal(nn.Module):
    """Registers a tensor hook inside forward, as gradient-reversal layers do."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        h = self.fc(x)
        h.register_hook(reverse)
        return h.sum(dim=1)


def reverse(grad):
    new = -grad
    LOG.add("reverse", {"grad": grad}, new)
    return new


def test_tensor_hook_registered_inside_forward():
    def install(model, log):
        global LOG
        LOG = log

    trace, plain = run_both(GradReversal, install)
    (event,) = user_events(trace, "reverse")
    hook = event.user_hook.hook
    assert hook.kind == "tensor" and hook.module == "" and hook.owner == "tensor (2, 3) made by AddmmBackward0 in (root).forward"
    assert hook.registered_at.endswith("test_user_hooks.py:" + str(GradReversal.forward.__code__.co_firstlineno + 2))
    got, ret = plain.calls[0][1][0][1], plain.calls[0][2][0]
    assert event.user_hook.changes == [f"grad replaced: max |Δ| {float((ret - got).abs().max()):.4g}, norm {norm_of(got):.4g} → {norm_of(ret):.4g}"]
    assert torch.Tensor.register_hook.__module__ == "torch._tensor"  # the patch is gone


def test_post_accumulate_grad_hook_on_a_parameter():
    def after_accumulate(param):
        LOG.add("acc", {"grad": param.grad})

    def install(model, log):
        global LOG
        LOG = log
        handle = model.fc1.weight.register_post_accumulate_grad_hook(after_accumulate)
        return [(model.fc1.weight._post_accumulate_grad_hooks, handle.id, after_accumulate)]

    trace, plain = run_both(Two, install)
    (event,) = user_events(trace, "after_accumulate")
    assert event.user_hook.hook.owner == "fc1.weight" and event.module == "fc1"
    assert record_named(event, "grad").stats.norm == pytest.approx(norm_of(plain.calls[0][1][0][1]), rel=1e-5)


def test_hook_that_modifies_its_gradient_in_place():
    def halve_in_place(grad):
        LOG.add("before", {"grad": grad})
        grad.mul_(0.5)
        LOG.add("after", {"grad": grad})

    def install(model, log):
        global LOG
        LOG = log
        model.fc2.bias.register_hook(halve_in_place)

    trace, plain = run_both(Two, install)
    (event,) = user_events(trace, "halve_in_place")
    before, after = plain.calls[0][1][0][1], plain.calls[1][1][0][1]
    assert event.user_hook.returned == "None"
    assert event.user_hook.changes == [f"grad modified in place: norm {norm_of(before):.4g} → {norm_of(after):.4g}"]


def test_hook_that_raises_propagates_as_without_hooktui():
    class Refused(ValueError):
        pass

    def refuse(module, args, output):
        raise Refused("no negative outputs allowed")

    torch.manual_seed(0)
    plain = Two()
    plain.fc1.register_forward_hook(refuse)
    with pytest.raises(Refused) as plain_error:
        plain(_inputs())

    torch.manual_seed(0)
    model = Two()
    handle = model.fc1.register_forward_hook(refuse)
    trace = record(model, _inputs())
    assert trace.failed and trace.error.type == "Refused" and trace.error.message == str(plain_error.value)
    (event,) = user_events(trace, "refuse")
    assert event.user_hook.returned == "raised" and event.user_hook.error == f"Refused: {plain_error.value}"
    assert trace.events[-1].hook == "error"
    assert model.fc1._forward_hooks[handle.id] is refuse


def test_hook_removed_by_the_model_mid_run_and_hook_order():
    class TwiceCalled(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.handle = self.fc.register_forward_hook(once)
            self.fc.register_forward_hook(always)

        def forward(self, x):
            return self.fc(self.fc(x))

    def once(module, args, output):
        LOG.add("once", {"output": output})
        module_owner().handle.remove()

    def always(module, args, output):
        LOG.add("always", {"output": output})

    owners = []

    def module_owner():
        return owners[-1]

    def build():
        model = TwiceCalled()
        owners.append(model)
        return model

    def install(model, log):
        global LOG
        LOG = log

    trace, plain = run_both(build, install)
    assert [name for name, _, _ in plain.calls] == ["once", "always", "always"]
    names = [e.user_hook.hook.function.rpartition(".")[2] for e in user_events(trace)]
    assert names == ["once", "always", "always"]
    model = owners[-1]
    assert list(model.fc._forward_hooks.values()) == [always]  # removed, and the other one restored


def test_hooks_found_at_start_are_listed_with_owner_and_definition():
    from hooktui.engine.capture.user_hooks import discover

    def seen(module, grad_input, grad_output):
        pass

    model = Two()
    model.fc1.register_full_backward_hook(seen)
    model.fc2.weight.register_hook(torch.neg)
    infos = [s.info for s in discover(model)]
    assert [(i.kind, i.owner, i.module) for i in infos] == [("full_backward", "fc1", "fc1"), ("tensor", "fc2.weight", "fc2")]
    assert infos[0].function.endswith("seen") and infos[0].lineno == seen.__code__.co_firstlineno
    assert infos[0].filename == __file__


def test_seed_user_hook_sample_shows_the_users_own_hook_with_the_1_by_5_tensor(capsys):
    from plain_hooks import load_sample

    sample = load_sample("seed_user_hook")
    # Without hooktui: what the user's printgradnorm prints.
    model = sample.build_model()
    model(sample.example_inputs()).sum().backward()
    plain_out = capsys.readouterr().out
    assert "grad_input size: torch.Size([1, 5])" in plain_out

    trace = record(sample.build_model(), sample.example_inputs())
    assert capsys.readouterr().out == plain_out  # their hook ran, once, printing the same
    (event,) = user_events(trace, "printgradnorm")
    assert event.module == "fc1" and event.grad_fn == "ViewBackward0"
    assert [(t.name, t.shape) for t in event.tensors] == [("grad_input[0]", [1, 5]), ("grad_output[0]", [1, 1, 5])]
    assert event.source.filename.endswith("seed_user_hook.py")
    assert event.source.lineno == sample.printgradnorm.__code__.co_firstlineno


def test_forward_pre_hook_with_kwargs_replacing_args_and_keeping_kwargs():
    class Scaled(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 3)

        def forward(self, x, *, scale):
            return self.fc(x) * scale

    class Outer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = Scaled()
            self.scale = nn.Parameter(torch.tensor(2.0))

        def forward(self, x):
            return self.inner(x, scale=self.scale)

    def halve_args(module, args, kwargs):
        out = ((args[0] / 2,), kwargs)
        LOG.add("pre", {"args[0]": args[0], "scale": kwargs["scale"]}, [out[0][0], out[1]["scale"]])
        return out

    def install(model, log):
        global LOG
        LOG = log
        handle = model.inner.register_forward_pre_hook(halve_args, with_kwargs=True)
        return [(model.inner._forward_pre_hooks, handle.id, halve_args)]

    trace, plain = run_both(Outer, install)
    (event,) = user_events(trace, "halve_args")
    assert event.user_hook.hook.flags == ["with_kwargs"]
    got = dict(plain.calls[0][1])
    assert [t.name for t in event.tensors] == ["args[0]", "kwargs['scale']", "returned args[0]"]
    (change,) = event.user_hook.changes  # kwargs came back as they were: no change reported
    assert change.startswith("args[0] replaced") and f"{float((got['args[0]'] / 2).abs().max()):.4g}" in change


def test_hook_raising_in_backward_propagates_with_its_type():
    class Vetoed(RuntimeError):
        pass

    def veto(module, grad_output):
        raise Vetoed("gradient vetoed")

    torch.manual_seed(0)
    plain = nn.Linear(3, 2)
    plain.register_full_backward_pre_hook(veto)
    with pytest.raises(Vetoed):
        plain(torch.ones(1, 3)).sum().backward()

    model = nn.Linear(3, 2)
    model.register_full_backward_pre_hook(veto)
    trace = record(model, torch.ones(1, 3))
    assert trace.failed and trace.error.type == "Vetoed"
    (event,) = [e for e in trace.events if e.hook == "user_hook"]
    assert event.phase == "backward" and event.user_hook.returned == "raised"


class WrongSizeGrad(nn.Module):
    """A tensor hook that returns a gradient of the wrong size: PyTorch refuses it, naming it."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        h = self.fc(x)

        def resize_the_grad(grad):
            return torch.ones(grad.numel() + 1)

        h.register_hook(resize_the_grad)
        return h.sum()


def test_pytorchs_refusal_of_a_users_hook_names_the_users_function():
    torch.manual_seed(0)
    with pytest.raises(RuntimeError) as plain_error:
        WrongSizeGrad()(_inputs()).backward()
    assert "resize_the_grad" in str(plain_error.value)

    torch.manual_seed(0)
    trace = record(WrongSizeGrad(), _inputs())
    assert trace.failed and trace.error.type == "RuntimeError" and trace.error.message == str(plain_error.value)
