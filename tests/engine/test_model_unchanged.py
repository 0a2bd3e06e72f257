"""Tracing leaves the model as it was: no hooks, same parameters, buffers, .grad objects,
training flag, and the traced output equals an untraced run's."""


import pytest
import torch
from torch import nn

import hooktui
from plain_hooks import SAMPLES, hooks_left, load_sample

NAMES = sorted(p.stem for p in SAMPLES.glob("*.py"))

load = load_sample


def snapshot(model: nn.Module):
    return {
        "params": {n: p.detach().clone() for n, p in model.named_parameters()},
        "buffers": {n: b.detach().clone() for n, b in model.named_buffers()},
        "grads": {n: (p.grad, None if p.grad is None else p.grad.clone()) for n, p in model.named_parameters()},
        "training": {n: m.training for n, m in model.named_modules()},
        "requires_grad": {n: p.requires_grad for n, p in model.named_parameters()},
        "hooks": hooks_left(model),  # the model's own (seed_user_hook has one)
        "hook_functions": _hook_functions(model),
    }


def _hook_functions(model: nn.Module) -> list:
    """(module, dict, key, function) of every module hook the model carries itself."""
    return [
        (name, attr, key, fn)
        for name, module in model.named_modules()
        for attr in ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks")
        for key, fn in getattr(module, attr).items()
    ]


def assert_unchanged(model: nn.Module, before) -> None:
    after = snapshot(model)
    for name, value in before["params"].items():
        assert torch.equal(after["params"][name], value), f"parameter {name} changed"
    for name, value in before["buffers"].items():
        assert torch.equal(after["buffers"][name], value), f"buffer {name} changed"
    for name, (obj, values) in before["grads"].items():
        now = dict(model.named_parameters())[name].grad
        assert now is obj, f".grad of {name} replaced"
        if values is not None:
            assert torch.equal(now, values), f".grad of {name} changed"
    assert after["training"] == before["training"]
    assert after["requires_grad"] == before["requires_grad"]
    assert hooks_left(model) == before["hooks"]
    now = _hook_functions(model)
    assert len(now) == len(before["hook_functions"])
    for (name, attr, key, fn), (name2, attr2, key2, fn2) in zip(now, before["hook_functions"]):
        assert (name, attr, key) == (name2, attr2, key2) and fn is fn2, "the model's own hook is its original function again"


@pytest.mark.parametrize("name", NAMES)
def test_samples_unchanged_with_no_grads(name):
    sample = load(name)
    model = sample.build_model()
    before = snapshot(model)
    assert all(g is None for g, _ in before["grads"].values())
    trace = hooktui.record(model, sample.example_inputs(), getattr(sample, "loss_fn", None))
    assert not trace.failed
    assert_unchanged(model, before)


def test_existing_grads_stay_the_same_objects_with_the_same_values():
    cnn = load("cnn")
    model = cnn.build_model()
    # A previous training step left gradients behind; one parameter has none.
    cnn.loss_fn(model(cnn.example_inputs())).backward()
    model.head.bias.grad = None
    model.train()
    before = snapshot(model)
    assert before["grads"]["features.0.weight"][0] is not None
    # Running stats moved during that step: they must not move again.
    assert not torch.equal(model.features[1].running_mean, torch.zeros(8))
    trace = hooktui.record(model, cnn.example_inputs(), cnn.loss_fn)
    assert not trace.failed
    assert_unchanged(model, before)
    assert int(model.features[1].num_batches_tracked) == 1


def test_input_leaf_grad_restored():
    seed = load("seed")
    x = seed.example_inputs().requires_grad_(True)
    old = torch.full_like(x, 7.0)
    x.grad = old
    trace = hooktui.record(seed.build_model(), x)
    assert not trace.failed
    assert x.grad is old and torch.equal(old, torch.full_like(x, 7.0))
    root = next(e for e in trace.events if e.hook == "backward" and e.module == "")
    assert root.tensors[0].shape == [1, 1, 10]  # the input's gradient was seen, not accumulated


class WithDropout(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.drop = nn.Dropout(0.5)
        self.bn = nn.BatchNorm1d(8)

    def forward(self, x):
        return self.bn(self.drop(torch.relu(self.fc(x))))


@pytest.mark.parametrize("name", NAMES + ["dropout"])
def test_traced_output_equals_untraced(name):
    if name == "dropout":
        torch.manual_seed(0)
        model, make_inputs, loss_fn = WithDropout(), (lambda: torch.randn(4, 8, generator=torch.Generator().manual_seed(1))), None
    else:
        sample = load(name)
        model, make_inputs, loss_fn = sample.build_model(), sample.example_inputs, getattr(sample, "loss_fn", None)
    before = snapshot(model)
    from hooktui.engine.run.inputs import split_inputs

    args, kwargs = split_inputs(make_inputs())
    torch.manual_seed(123)
    expected = model(*args, **kwargs)
    # That untraced step moved BatchNorm's running stats: put them back for a fair rerun.
    with torch.no_grad():
        for n, b in model.named_buffers():
            b.copy_(before["buffers"][n])
    torch.manual_seed(123)
    trace = hooktui.record(model, make_inputs(), loss_fn)
    assert not trace.failed
    flat = lambda o: [o] if isinstance(o, torch.Tensor) else list(o.values()) if isinstance(o, dict) else list(o)  # noqa: E731
    for got, want in zip(flat(trace.output), flat(expected), strict=True):
        assert torch.equal(got.detach(), want.detach())
    assert_unchanged(model, before)


def test_eval_mode_model_stays_in_eval():
    cnn = load("cnn")
    model = cnn.build_model().eval()
    before = snapshot(model)
    hooktui.record(model, cnn.example_inputs(), cnn.loss_fn)
    assert_unchanged(model, before)
    assert not model.training


def test_unchanged_after_a_failed_run():
    class Boom(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)

        def forward(self, x):
            self.fc(x).sum().backward()  # a backward inside forward writes .grad ...
            raise RuntimeError("boom")

    model = Boom()
    before = snapshot(model)
    trace = hooktui.record(model, torch.ones(1, 2))
    assert trace.failed
    assert_unchanged(model, before)


def test_hook_dicts_are_left_as_small_as_an_untraced_models():
    """Removing a hook leaves a dict's grown table behind (~200 bytes, five dicts per
    module, one per parameter): a traced model must not keep them."""
    import sys

    def sizes(model: nn.Module):
        return (
            [sys.getsizeof(d) for m in model.modules() for d in vars(m).values() if isinstance(d, dict)],
            [p._post_accumulate_grad_hooks for p in model.parameters()],
        )

    torch.manual_seed(0)
    traced, untouched = nn.Sequential(nn.Linear(4, 4), nn.GELU()), nn.Sequential(nn.Linear(4, 4), nn.GELU())
    kept = traced[0].bias.register_post_accumulate_grad_hook(lambda p: None)  # the user's own: stays
    untouched[0].bias.register_post_accumulate_grad_hook(lambda p: None)
    trace = hooktui.record(traced, torch.randn(2, 4))
    assert not trace.failed and any(e.hook == "param_grad" for e in trace.events)
    assert sizes(traced)[0] == sizes(untouched)[0]
    hooks = sizes(traced)[1]
    assert hooks[0] is None and len(hooks[1]) == 1 and kept.id in hooks[1]
