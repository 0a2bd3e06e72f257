"""hooktui's forward hooks and parameter hooks are put straight into PyTorch's hook dicts
(capture/module_hooks.py, capture/param_grads.py): placed as the public registration calls
would place them, taken out again, and a module class that registers its own way is still
asked to."""

import torch
from torch import nn

import hooktui


def test_the_hooks_are_placed_as_the_public_calls_place_them_and_go_with_the_run():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.GELU(), nn.Linear(4, 2))
    inner = model[0]
    seen = {}

    def user_pre(module, args):  # the model's own hook, registered before the run: seen first
        # What PyTorch would hold for three hooks registered with the public calls, in
        # that order: a pre-hook with kwargs; a forward hook with kwargs; one with kwargs
        # that is always called.
        pre = [k for k in module._forward_pre_hooks if k != user_key]
        post = list(module._forward_hooks)
        seen["pre_with_kwargs"] = [k in module._forward_pre_hooks_with_kwargs for k in pre]
        seen["post_with_kwargs"] = [k in module._forward_hooks_with_kwargs for k in post]
        seen["always"] = [k in module._forward_hooks_always_called for k in post]
        seen["ids_after_user"] = all(k > user_key for k in pre + post)
        seen["param_hooks"] = [len(p._post_accumulate_grad_hooks or ()) for p in module.parameters()]

    user_key = inner.register_forward_pre_hook(user_pre).id
    before = {attr: dict(getattr(inner, attr)) for attr in
              ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks",
               "_forward_hooks_with_kwargs", "_forward_hooks_always_called")}
    trace = hooktui.record(model, torch.randn(3, 4))
    assert not trace.failed
    assert seen == {"pre_with_kwargs": [True], "post_with_kwargs": [True, True], "always": [False, True],
                    "ids_after_user": True, "param_hooks": [1, 1]}
    assert {attr: dict(getattr(inner, attr)) for attr in before} == before
    assert all(p._post_accumulate_grad_hooks is None for p in model.parameters())
    assert {e.hook for e in trace.events if e.module == "0"} >= {"forward_pre", "forward", "backward_pre", "backward",
                                                                  "param_grad"}


class _Registering(nn.Linear):
    """A module that does something of its own when a hook is registered on it."""

    registered: list

    def register_forward_pre_hook(self, hook, **kwargs):
        self.registered.append("pre")
        return super().register_forward_pre_hook(hook, **kwargs)

    def register_forward_hook(self, hook, **kwargs):
        self.registered.append("always" if kwargs.get("always_call") else "forward")
        return super().register_forward_hook(hook, **kwargs)


def test_a_module_that_overrides_registration_is_registered_on_through_it():
    torch.manual_seed(0)
    layer = _Registering(4, 2)
    layer.registered = []
    model = nn.Sequential(nn.Linear(4, 4), layer)
    trace = hooktui.record(model, torch.randn(3, 4))
    assert not trace.failed
    assert layer.registered == ["pre", "forward", "always"]
    assert not layer._forward_hooks and not layer._forward_pre_hooks
    assert [e.hook for e in trace.events if e.module == "1" and e.hook.startswith("forward")] == ["forward_pre", "forward"]
