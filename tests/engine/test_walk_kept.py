"""A model's walk is kept from one run to the next (capture/model_walk.py `walk_of`): a
second `record()` of an unchanged model walks it no more, and one of a model changed
since (a module replaced, added or removed, a parameter replaced, a hook added) fires
exactly what PyTorch's own hooks fire on a twin changed the same way (plain_hooks.py),
parameter gradients included."""

import gc
import weakref
from types import SimpleNamespace

import pytest
import torch
from torch import nn

import hooktui
from hooktui.engine.capture import model_walk
from plain_hooks import MODULE_HOOKS, assert_record_matches, engine_firings, hooks_left, plain_firings, record_all


def _build() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 4), nn.GELU(), nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 2))


def _x() -> torch.Tensor:
    return torch.randn(3, 4, generator=torch.Generator().manual_seed(1))


@pytest.fixture
def walks(monkeypatch):
    """How many times a model is walked (ModelWalk built), from now on."""
    model_walk.forget_walks()
    count = {"n": 0}
    init = model_walk.ModelWalk.__init__

    def counted(self, model):
        count["n"] += 1
        init(self, model)

    monkeypatch.setattr(model_walk.ModelWalk, "__init__", counted)
    return count


def test_a_second_record_of_an_unchanged_model_does_not_walk_it_again(walks):
    model = _build()
    first = hooktui.record(model, _x())
    assert walks["n"] == 1
    second = hooktui.record(model, _x())
    assert walks["n"] == 1  # the kept walk, checked, not a new one
    assert [(e.hook, e.module, e.call) for e in second.events] == [(e.hook, e.module, e.call) for e in first.events]
    assert second.info.modules == first.info.modules and second.info.modules is not first.info.modules
    assert hooks_left(model) == []
    assert all(p._post_accumulate_grad_hooks is None for p in model.parameters())


def _replace_linear(m):
    torch.manual_seed(5)
    m[2] = nn.Linear(4, 4)


def _replace_activation(m):
    m[1] = nn.SiLU()


def _add_module(m):
    torch.manual_seed(6)
    m.append(nn.Linear(2, 3))


def _remove_module(m):
    del m[3]


def _replace_parameter(m):
    torch.manual_seed(7)
    m[0].weight = nn.Parameter(torch.randn(4, 4))


def _add_hook(m):
    m[2].register_forward_hook(lambda _module, _args, output: output * 2)


@pytest.mark.parametrize("change", [_replace_linear, _replace_activation, _add_module, _remove_module,
                                    _replace_parameter, _add_hook])
def test_a_record_after_the_model_changed_fires_what_pytorch_fires(walks, change):
    model = _build()
    record_all(model, _x())  # the walk is kept
    change(model)
    twin = _build()
    change(twin)
    expected, _ = plain_firings(twin, (_x(),))
    trace = record_all(model, _x())
    assert not trace.failed, trace.error and trace.error.traceback
    # Walked again where the kept walk no longer matched; a hook is no part of a walk (the
    # user's hooks are found at every run).
    assert walks["n"] == (1 if change is _add_hook else 2)
    module_events = [e for e in trace.events if e.hook in MODULE_HOOKS]
    assert engine_firings(SimpleNamespace(events=module_events)) == [f.key() for f in expected]
    for event, firing in zip(module_events, expected):
        for record, tensor in zip([t for t in event.tensors if not t.extra], firing.tensors):
            assert_record_matches(record, tensor)
    # Every parameter of the changed model, and only those, fires with the twin's .grad.
    param_grads = {f"{e.module}.{e.tensors[0].name.removesuffix('.grad')}": e.tensors[0]
                   for e in trace.events if e.hook == "param_grad"}
    assert sorted(param_grads) == sorted(name for name, _ in twin.named_parameters())
    for name, record in param_grads.items():
        assert_record_matches(record, twin.get_parameter(name).grad)
    assert hooks_left(model) == ([] if change is not _add_hook else ["2._forward_hooks"])


def test_a_parameter_resized_in_place_is_described_with_its_new_shape(walks):
    model = _build()
    model[4].requires_grad_(False)  # autograd keeps the old shape of a parameter it has accumulated into
    hooktui.record(model, _x())
    with torch.no_grad():
        model[4].weight.data = torch.randn(3, 4)  # same Parameter object, a new shape
        model[4].bias.data = torch.randn(3)
    trace = hooktui.record(model, _x())
    assert not trace.failed
    assert walks["n"] == 2
    assert {m.name: m.params for m in trace.info.modules}["4"] == {"weight": [3, 4], "bias": [3]}


def test_a_kept_walk_does_not_keep_the_model_alive():
    model_walk.forget_walks()
    model = _build()
    model[2].register_forward_hook(lambda *_, root=model: None)  # a hook that holds the root
    assert not hooktui.record(model, _x()).failed
    gone = weakref.ref(model)
    del model
    gc.collect()
    assert gone() is None
