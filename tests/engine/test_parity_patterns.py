"""Patterns of real models where a node-hook debugger easily drifts from PyTorch's own full
backward hooks. Each is compared, firing by firing and value by value, with plain
`register_full_backward_pre_hook` / `register_full_backward_hook` on a second identical
copy (plain_hooks.py); where the point is a number, the number is also computed here by
hand from the model's arithmetic.
"""

import warnings
from types import SimpleNamespace

import pytest
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

import hooktui
from plain_hooks import (
    MODULE_HOOKS, assert_record_matches, assert_same_as_pytorch, engine_firings, hooks_left, plain_firings, randn, record_all, seeded,
)


def firing(events, hook, module, call=0):
    return next(e for e in events if e.hook == hook and e.module == module and e.call == call)


def values(record):
    return torch.tensor(record.values).reshape(record.shape)


# 1. Reentrant activation checkpointing -------------------------------------------------
class Checkpointed(nn.Module):
    def __init__(self):
        super().__init__()
        self.pre = nn.Linear(4, 4)
        self.blk = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 4))
        self.post = nn.Linear(4, 2)

    def forward(self, x):
        return self.post(checkpoint(self.blk, self.pre(x), use_reentrant=True))


class NonReentrant(Checkpointed):
    def forward(self, x):
        return self.post(checkpoint(self.blk, self.pre(x), use_reentrant=False))


def test_non_reentrant_checkpoint_matches_too():
    events = assert_same_as_pytorch(seeded(NonReentrant), randn(3, 4))
    assert [e.call for e in events if e.module == "blk" and e.hook == "backward"] == [0]


def test_reentrant_checkpoint_fires_the_recomputed_calls_backward():
    events = assert_same_as_pytorch(seeded(Checkpointed), randn(3, 4))
    # The checkpointed forward runs without grad (call 0) and again in backward (call 1):
    # the recomputed call is the one with backward firings, inside a nested backward.
    assert [e.call for e in events if e.module == "blk" and e.hook == "forward"] == [0, 1]
    blk = firing(events, "backward", "blk", call=1)
    assert any("nested" in note for note in blk.notes)


# 2. A module that returns its input and also uses it ------------------------------------
class Tap(nn.Module):
    def forward(self, x):
        return x, (2 * x).sum()


class TapParent(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.tap = Tap()

    def forward(self, x):
        h, aux = self.tap(self.fc(x))
        return (h * 3).sum() + aux


def test_input_returned_and_used_inside_gets_both_shares():
    events = assert_same_as_pytorch(seeded(TapParent), randn(2, 3))
    tap = firing(events, "backward", "tap")
    assert torch.equal(values(tap.tensors[0]), torch.full((2, 3), 5.0))  # 3 (returned) + 2 (used)
    assert torch.equal(values(firing(events, "backward_pre", "tap").tensors[0]), torch.full((2, 3), 3.0))


def test_the_caller_gets_an_equal_tensor_for_a_returned_input():
    model = seeded(TapParent)()
    seen = {}
    model.tap.register_forward_hook(lambda m, a, out: seen.update(x=a[0], out=out[0]))
    hooktui.record(model, randn(2, 3)())
    assert torch.equal(seen["x"], seen["out"])  # same values (a view of the same storage)


# 3. An output that is a leaf requiring grad -------------------------------------------------
def leaf_input(shape=(2, 3)):
    return randn(*shape, requires_grad=True)


@pytest.mark.parametrize(
    "first",
    [lambda: nn.Dropout(0.5), lambda: nn.Identity(), lambda: nn.Flatten()],
    ids=["dropout-eval", "identity", "flatten"],
)
def test_a_leaf_returned_as_is_fires_like_pytorch(first):
    def build():
        torch.manual_seed(0)
        return nn.Sequential(first(), nn.Linear(3, 1)).eval()

    events = assert_same_as_pytorch(build, leaf_input())
    pre = firing(events, "backward_pre", "0")
    assert pre.tensors[0].shape == [2, 3] and not pre.tensors[0].is_missing


class ReturnsParameter(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = nn.Parameter(torch.randn(2, 3))

    def forward(self, x):
        return self.table


class UsesTable(nn.Module):
    def __init__(self):
        super().__init__()
        self.lookup = ReturnsParameter()
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        return self.fc(self.lookup(x) * x)


def test_a_module_returning_a_parameter():
    assert_same_as_pytorch(seeded(UsesTable), randn(2, 3))


class FrozenEmbeddingModel(nn.Module):
    """HF's enable_input_require_grads() (the PEFT setup): a forward hook on the frozen
    embedding makes its output require grad, so gradient checkpointing has a grad input."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 4)
        self.embed.weight.requires_grad_(False)
        self.embed.register_forward_hook(lambda m, a, out: out.requires_grad_(True))
        self.fc = nn.Linear(4, 2)

    def forward(self, ids):
        return self.fc(self.embed(ids))


def test_frozen_embedding_made_to_require_grad_by_a_forward_hook():
    events = assert_same_as_pytorch(seeded(FrozenEmbeddingModel), lambda: torch.tensor([[1, 2, 3]]))
    assert firing(events, "backward_pre", "embed").tensors[0].shape == [1, 3, 4]


# 4. A tensor hook that changes an output's gradient -----------------------------------------
class Doubled(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 3)
        self.fc2 = nn.Linear(3, 1)

    def forward(self, x):
        h = self.fc1(x)
        h.register_hook(lambda g: g * 2)
        return self.fc2(h)


def test_grad_output_is_what_the_module_receives_after_a_tensor_hook():
    events = assert_same_as_pytorch(seeded(Doubled), randn(2, 3, requires_grad=True))
    model = seeded(Doubled)()
    w2 = model.fc2.weight.detach()
    assert torch.allclose(values(firing(events, "backward_pre", "fc1").tensors[0]), (2 * w2).expand(2, 3))


# 5. An input that reaches the loss outside the call's outputs (MoE aux loss) ----------------
class Router(nn.Module):
    def forward(self, x):
        self.aux = x.pow(2).sum()
        return x * 3


class WithAux(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.router = Router()

    def forward(self, x):
        return self.router(self.fc(x))


def test_aux_loss_share_is_in_grad_input():
    # plain_firings and record each build their own copy: the loss reads the copy it got.
    models = []

    def build():
        models.append(seeded(WithAux)())
        return models[-1]

    def loss(out):
        return out.sum() + models[-1].router.aux

    events = assert_same_as_pytorch(build, randn(2, 3), loss)
    router = firing(events, "backward", "router")
    fwd = firing(events, "forward", "router")
    x = torch.tensor(fwd.tensors[0].values).reshape(2, 3)
    assert torch.allclose(values(router.tensors[0]), 3 + 2 * x, atol=1e-6)


# 6. The same tensor returned twice -------------------------------------------------------------
class Twice(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        y = self.fc(x)
        return y, y


def test_the_same_tensor_returned_twice_keeps_two_slots_apart():
    events = assert_same_as_pytorch(seeded(Twice), randn(2, 3), lambda out: out[0].sum() + 5 * out[1].sum())
    pre = firing(events, "backward_pre", "")
    assert torch.equal(values(pre.tensors[0]), torch.ones(2, 3))
    assert torch.equal(values(pre.tensors[1]), torch.full((2, 3), 5.0))


# 7. The same tensor as a positional and a keyword argument ------------------------------------
class Inner(nn.Module):
    def forward(self, x, y=None):
        return 2 * x + 3 * y


class KwargTwin(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.inner = Inner()

    def forward(self, x):
        h = self.fc(x)
        return self.inner(h, y=h)


def test_a_kwarg_that_is_also_a_positional_arg_stays_out_of_grad_input():
    events = assert_same_as_pytorch(seeded(KwargTwin), randn(2, 3))
    inner = firing(events, "backward", "inner")
    assert torch.equal(values(inner.tensors[0]), torch.full((2, 3), 2.0))  # not 2 + 3
    fc = firing(events, "backward_pre", "fc")
    assert torch.equal(values(fc.tensors[0]), torch.full((2, 3), 5.0))  # every use of h


# 8. Slots for non-tensor and nested outputs -----------------------------------------------------
class Mixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        y = self.fc(x)
        return y, 3, None, y * 2


class MixedParent(nn.Module):
    def __init__(self):
        super().__init__()
        self.mixed = Mixed()

    def forward(self, x):
        y, _, _, z = self.mixed(x)
        return y.sum() + z.sum() * 4


def test_non_tensor_elements_of_an_output_tuple_are_none_slots():
    events = assert_same_as_pytorch(seeded(MixedParent), randn(2, 3))
    pre = firing(events, "backward_pre", "mixed")
    assert [t.name for t in pre.tensors] == [f"grad_output[{i}]" for i in range(4)]
    assert [t.shape is None for t in pre.tensors] == [False, True, True, False]
    assert "not a tensor" in pre.tensors[1].missing and "is None" in pre.tensors[2].missing
    assert torch.equal(values(pre.tensors[3]), torch.full((2, 3), 4.0))


class LSTMModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 4, batch_first=True)
        self.head = nn.Linear(4, 1)

    def forward(self, x):
        out, (h, c) = self.lstm(x)
        return self.head(out).sum() + (h * 2).sum() + c.sum()


def test_lstm_nested_state_is_a_none_slot_and_named_extras():
    events = assert_same_as_pytorch(seeded(LSTMModel), randn(2, 5, 3))
    pre = firing(events, "backward_pre", "lstm")
    assert [t.name for t in pre.tensors] == ["grad_output[0]", "grad_output[1]", "grad of output[1][0]", "grad of output[1][1]"]
    assert pre.tensors[1].shape is None and "nested tuple" in pre.tensors[1].missing
    assert [t.extra for t in pre.tensors] == [False, False, True, True]
    assert torch.allclose(values(pre.tensors[2]), torch.full((1, 2, 4), 2.0))  # d loss / d h_n
    assert torch.allclose(values(pre.tensors[3]), torch.full((1, 2, 4), 1.0))  # d loss / d c_n


class SelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(4, 4)
        self.attn = nn.MultiheadAttention(4, 2, batch_first=True)

    def forward(self, x):
        q = self.q(x)
        out, _ = self.attn(q, x, x, need_weights=False)
        return out


def test_multihead_attention_output_has_a_none_slot_for_its_weights():
    events = assert_same_as_pytorch(seeded(SelfAttention), randn(2, 3, 4))
    pre = firing(events, "backward_pre", "attn")
    assert len(pre.tensors) == 2 and pre.tensors[1].shape is None


# 9. torch.autograd.grad inside forward ----------------------------------------------------------
class Physics(nn.Module):
    """A physics-informed net: the loss uses du/dx, computed in forward."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, 8), nn.Tanh(), nn.Linear(8, 1))

    def forward(self, x):
        x = x.requires_grad_(True) if not x.requires_grad else x
        u = self.net(x)
        (du,) = torch.autograd.grad(u.sum(), x, create_graph=True)
        return u, du


def test_autograd_grad_inside_forward_fires_as_pytorch_does():
    def make():
        g = torch.Generator().manual_seed(1)
        return torch.rand(5, 1, generator=g).requires_grad_()

    events = assert_same_as_pytorch(seeded(Physics), make, lambda out: out[0].pow(2).sum() + out[1].pow(2).sum())
    first = firing(events, "backward", "net.0")
    assert first.phase == "forward" and any("during the forward pass" in n for n in first.notes)


BOUND_GRAD = torch.autograd.grad  # bound before any run, as `from torch.autograd import grad` is


class PhysicsWithBoundGrad(Physics):
    def __init__(self):
        super().__init__()
        self.net[1] = nn.SiLU()  # its double backward reads its saved input

    def forward(self, x):
        u = self.net(x)
        (du,) = BOUND_GRAD(u.sum(), x, create_graph=True)
        return u, du


def test_a_backward_through_a_function_bound_before_the_run_fires_like_pytorch():
    # It reaches the autograd engine without torch.autograd.grad's wrapper: the engine's own
    # proxy notices it, second-order values included.
    def make():
        return torch.rand(5, 1, generator=torch.Generator().manual_seed(1), dtype=torch.float64).requires_grad_()

    def build():
        torch.manual_seed(0)
        return PhysicsWithBoundGrad().double()

    events = assert_same_as_pytorch(build, make, lambda out: out[0].pow(2).sum() + out[1].pow(2).sum())
    first = firing(events, "backward", "net.0")
    assert first.phase == "forward" and any("torch.autograd.grad() called during the forward pass" in n for n in first.notes)


def test_the_engine_is_given_back_after_the_run():
    from torch.autograd.variable import Variable

    engine = Variable._execution_engine
    hooktui.record(seeded(Small)(), randn(2, 3)())
    assert Variable._execution_engine is engine and torch.autograd.grad is BOUND_GRAD


# 12. Lazy modules ----------------------------------------------------------------------------------
def test_lazy_modules_trace_and_end_materialised_like_a_plain_run():
    def build():
        torch.manual_seed(0)
        return nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.LazyLinear(1))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Lazy modules are a new feature..."
        plain = build()
        plain(randn(2, 3)())
        model = build()
        trace = hooktui.record(model, randn(2, 3)())
    assert not trace.failed, trace.error
    assert [e.module for e in trace.events if e.hook == "backward"] == ["", "2", "1", "0"]
    for (name, p), (_, q) in zip(model.named_parameters(), plain.named_parameters()):
        assert type(p) is nn.Parameter and torch.equal(p, q), name
        assert p.grad is None
    assert not hooks_left(model)
    grads = {e.tensors[0].target for e in trace.events if e.hook == "param_grad"}
    assert grads == {"0.weight", "0.bias", "2.weight", "2.bias"}


# An input returned unchanged, then modified in place (nn.Identity as a placeholder norm
# before an in-place activation): PyTorch's own hooks raise here, so the reference is an
# out-of-place twin with the same weights.
class IdentityThenInplace(nn.Module):
    def __init__(self, inplace=True):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.norm = nn.Identity()
        self.act = nn.ReLU(inplace=inplace)
        self.out = nn.Linear(3, 1)

    def forward(self, x):
        return self.out(self.act(self.norm(self.fc(x))))


def test_identity_before_an_inplace_activation_keeps_every_firing():
    events = assert_same_as_pytorch(seeded(IdentityThenInplace), randn(2, 3), build_plain=seeded(IdentityThenInplace, False))
    assert firing(events, "backward", "norm").tensors[0].shape == [2, 3]


# 11. torch.compile ------------------------------------------------------------------------------
class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.act = nn.Tanh()
        self.fc2 = nn.Linear(4, 1)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def test_compiled_models_fire_like_pytorch_on_every_backend():
    import torch._dynamo

    for backend in ("eager", "aot_eager", "inductor"):
        torch._dynamo.reset()

        def build():
            torch.manual_seed(0)
            return torch.compile(Small(), backend=backend)

        # PyTorch's names carry torch.compile's `_orig_mod.`; hooktui shows the model's own.
        events = assert_same_as_pytorch(build, randn(2, 3, requires_grad=True), rename=lambda raw: {
            "": "[OptimizedModule]", "_orig_mod": ""}.get(raw, raw.removeprefix("_orig_mod.")))
        root = [e.hook for e in events if e.module == "[OptimizedModule]" and e.phase == "backward"]
        assert root == ["backward_pre"], backend  # the OptimizedModule: PyTorch's full hook never fires
        assert firing(events, "backward", "fc1").tensors[0].shape == [2, 3]


# Documented limit: an input returned unchanged (nn.Identity as a shortcut) whose tensor the
# caller also uses directly after the call. The caller holds one tensor; PyTorch's wrapper
# hands it a second one.
class Shortcut(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.shortcut = nn.Identity()
        self.block = nn.Linear(3, 3)

    def forward(self, x):
        h = self.fc(x)
        return self.shortcut(h) + self.block(h)


def test_identity_shortcut_whose_input_is_used_again_after_it_sums_every_later_use():
    plain, _ = plain_firings(seeded(Shortcut)(), (randn(2, 3)(),))
    events = record_all(seeded(Shortcut)(), randn(2, 3)()).events
    plain_pre = next(f for f in plain if f.hook == "backward_pre" and f.module == "shortcut")
    plain_fc = next(f for f in plain if f.hook == "backward_pre" and f.module == "fc")
    pre = firing(events, "backward_pre", "shortcut")
    assert torch.equal(plain_pre.tensors[0], torch.ones(2, 3))  # PyTorch: only the returned value's use
    assert torch.allclose(values(pre.tensors[0]), plain_fc.tensors[0])  # hooktui: every use of h after the call
    assert any("input returned unchanged, used more than once" in note for note in pre.notes)


class ClipsItsOwnOutput(nn.Module):
    """A module that puts a gradient hook on its own output inside forward: PyTorch runs it
    after the module's backward_pre (its wrapper sits outside the module)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        y = self.fc(x) * 1
        y.register_hook(lambda g: g * 10)
        return y


class ClipParent(nn.Module):
    def __init__(self):
        super().__init__()
        self.clip = ClipsItsOwnOutput()
        self.head = nn.Linear(3, 1)

    def forward(self, x):
        return self.head(self.clip(x))


def test_a_hook_the_module_puts_on_its_own_output_runs_after_backward_pre():
    events = assert_same_as_pytorch(seeded(ClipParent), randn(2, 3))
    w = seeded(ClipParent)().head.weight.detach()
    assert torch.allclose(values(firing(events, "backward_pre", "clip").tensors[0]), w.expand(2, 3))
    assert torch.allclose(values(firing(events, "backward_pre", "clip.fc").tensors[0]), 10 * w.expand(2, 3))
    # Both are shown: what backward_pre received, and (an extra) what the module consumes.
    pre = firing(events, "backward_pre", "clip")
    changed = [t for t in pre.tensors if t.extra]
    assert [t.name for t in changed] == ["grad_output[0] after the module's hooks"]
    assert torch.allclose(values(changed[0]), 10 * w.expand(2, 3))


# Round 3 (issue 23) ------------------------------------------------------------------------------
# 1. Code inside `except`: sys.exc_info() is set there, and says nothing about the call's forward.
class NotYet(nn.Module):
    def forward(self, h):
        raise NotImplementedError("no fast path for this shape")


class FallsBack(nn.Module):
    """Tries a fast child, falls back to a slow one when it raises."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.fast = nn.Sequential(nn.Tanh(), NotYet())
        self.slow = nn.Linear(3, 2)

    def forward(self, x):
        h = self.fc(x)
        try:
            return self.fast(h)
        except NotImplementedError:
            return self.slow(h)


def test_a_child_called_in_an_except_block_after_another_raised_fires_like_pytorch():
    events = assert_same_as_pytorch(seeded(FallsBack), randn(2, 3, requires_grad=True))
    assert [e.hook for e in events if e.module == "slow"] == ["forward_pre", "forward", "backward_pre", "backward"]
    assert [e.hook for e in events if e.module == "fast.1"] == ["forward_pre"]  # it raised: no forward firing


def test_record_called_inside_an_except_handler_fires_like_pytorch():
    try:
        raise ValueError("the step that just failed")
    except ValueError:
        events = assert_same_as_pytorch(seeded(Small), randn(2, 3, requires_grad=True))
        assert [e.hook for e in events if e.module == "fc1"] == ["forward_pre", "forward", "backward_pre", "backward"]


class FailsLater(FallsBack):
    def forward(self, x):
        return self.slow(super().forward(x)[:, :1].expand(2, 3)) / 0 + self.fc.weight.t()


def test_a_caught_exception_is_not_blamed_for_a_later_one():
    trace = hooktui.record(seeded(FailsLater)(), randn(2, 3)())
    assert trace.failed and trace.events[-1].hook == "error"
    assert trace.events[-1].module == ""  # the root's forward raised it, not fast.1 (its exception was caught)


# 3. A module that hooks its own input inside forward: PyTorch's grad_input is after that hook.
class HalvesItsInputGrad(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        x.register_hook(lambda g: g * 0.5)
        return torch.tanh(self.fc(x)) + x


class HookedInputParent(nn.Module):
    def __init__(self):
        super().__init__()
        self.pre = nn.Linear(3, 3)
        self.inner = HalvesItsInputGrad()
        self.out = nn.Linear(3, 1)

    def forward(self, x):
        return self.out(self.inner(self.pre(x)))


@pytest.mark.parametrize("leaf", [False, True], ids=["made-by-a-layer", "leaf-input"])
def test_grad_input_is_after_a_hook_the_module_put_on_its_input(leaf):
    def build():
        torch.manual_seed(0)
        return HookedInputParent() if not leaf else HalvesItsInputGrad()

    events = assert_same_as_pytorch(build, randn(2, 3, requires_grad=True))
    name = "inner" if not leaf else ""
    plain, _ = plain_firings(build(), (randn(2, 3, requires_grad=True)(),))
    before = firing(events, "backward_pre", name)  # grad_output, then the module's own math
    fc_input = next(f for f in plain if f.hook == "backward" and f.module == ("inner.fc" if not leaf else "fc")).tensors[0]
    # Independently: half of (the share through fc + the identity's share).
    assert torch.allclose(values(firing(events, "backward", name).tensors[0]), 0.5 * (fc_input + values(before.tensors[0])), atol=1e-6)


class HookedInputUsedOutside(HookedInputParent):
    def forward(self, x):
        h = self.pre(x)
        return self.out(self.inner(h)) + h.sum()


def test_a_hooked_input_also_used_outside_says_its_grad_input_is_before_the_hook():
    model = seeded(HookedInputUsedOutside)()
    events = record_all(model, randn(2, 3)()).events
    plain, _ = plain_firings(seeded(HookedInputUsedOutside)(), (randn(2, 3)(),))
    want = next(f for f in plain if f.hook == "backward" and f.module == "inner").tensors[0]
    got = firing(events, "backward", "inner")
    assert torch.allclose(values(got.tensors[0]), 2 * want, atol=1e-6)  # before the halving hook
    assert any("before the gradient hook this module put on args[0]" in n for n in got.notes)


# 2. Second-order gradients: a node a create_graph backward builds reads a tensor some op
# saved; PyTorch's wrappers route it into the module that op belongs to.
class Residual(nn.Module):
    """A PINN: the loss is the residual u'' + u, both derivatives taken in forward."""

    def __init__(self, act):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, 6), act(), nn.Linear(6, 6), act(), nn.Linear(6, 1))

    def forward(self, x):
        u = self.net(x)
        (du,) = torch.autograd.grad(u.sum(), x, create_graph=True)
        (d2u,) = torch.autograd.grad(du.sum(), x, create_graph=True)
        return (d2u + u).pow(2).mean()


def points():
    return torch.rand(5, 1, generator=torch.Generator().manual_seed(1), dtype=torch.float64).requires_grad_()


@pytest.mark.parametrize("act", [nn.SiLU, nn.GELU, nn.Softplus, nn.Tanh], ids=lambda a: a.__name__)
def test_pinn_residual_second_derivatives_fire_like_pytorch(act):
    def build():
        torch.manual_seed(0)
        return Residual(act).double()

    events = assert_same_as_pytorch(build, points, lambda loss: loss)
    # Three backwards reach the activations: two in forward, the main one.
    assert [e.phase for e in events if e.module == "net.1" and e.hook == "backward"] == ["forward", "forward", "backward"]


class MAML(nn.Module):
    """One inner SGD step taken in forward; the outer loss flows through the inner gradient."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, 4), nn.Tanh(), nn.Linear(4, 1))

    def forward(self, support, query):
        inner = (self.net(support) - 1).pow(2).mean()
        grads = torch.autograd.grad(inner, list(self.net.parameters()), create_graph=True)
        fast = {name: p - 0.4 * g for (name, p), g in zip(self.net.named_parameters(), grads)}
        return torch.func.functional_call(self.net, fast, (query,))


def test_maml_outer_gradient_through_the_inner_step_matches_pytorch():
    def inputs():
        g = torch.Generator().manual_seed(1)
        return torch.randn(3, 2, generator=g, dtype=torch.float64), torch.randn(3, 2, generator=g, dtype=torch.float64)

    def build():
        torch.manual_seed(0)
        return MAML().double()

    events = assert_same_as_pytorch(build, inputs)
    # The first call of net.2 (the inner step) gets the outer gradient through its saved input.
    outer = [e for e in events if e.module == "net.2" and e.call == 0 and e.hook == "backward" and e.phase == "backward"]
    assert len(outer) == 1 and outer[0].tensors[0].stats.max != 0


class GradientPenalty(nn.Module):
    """WGAN-GP: the critic's gradient at an interpolate, penalised, all in forward."""

    def __init__(self):
        super().__init__()
        self.critic = nn.Sequential(nn.Linear(3, 5), nn.LeakyReLU(0.2), nn.Linear(5, 1))

    def forward(self, real, fake):
        a = torch.full((real.shape[0], 1), 0.3)
        mixed = (a * real + (1 - a) * fake).requires_grad_(True)
        (g,) = torch.autograd.grad(self.critic(mixed).sum(), mixed, create_graph=True)
        penalty = ((g.norm(2, dim=1) - 1) ** 2).mean()
        return self.critic(fake).mean() - self.critic(real).mean() + 10 * penalty


def test_wgan_gp_penalty_in_forward_fires_the_critics_outer_backward():
    def inputs():
        g = torch.Generator().manual_seed(1)
        return torch.randn(4, 3, generator=g), torch.randn(4, 3, generator=g).requires_grad_()

    events = assert_same_as_pytorch(seeded(GradientPenalty), inputs, lambda loss: loss)
    first = [e.hook for e in events if e.module == "critic.0" and e.call == 0 and e.phase == "backward"]
    assert first == ["backward_pre", "backward"]


# 4. Modules called on worker threads. Their autograd nodes are numbered by their own
# thread's counter; the order of the branches varies from run to run (in PyTorch too), so
# the firings are compared as a set, and the order where it is fixed (a branch's backward
# before the backward_pre of the layer that fed it).
class ThreadedBranches(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(3, 4)
        self.branches = nn.ModuleList([nn.Sequential(nn.Linear(4, 4), nn.Tanh()) for _ in range(3)])
        self.head = nn.Linear(12, 1)

    def forward(self, x):
        h = self.stem(x)
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(3) as pool:
            outs = list(pool.map(lambda branch: branch(h), self.branches[:2]))
            outs.append(pool.submit(self.branches[2], h * 2).result())
        return self.head(torch.cat(outs, -1))


def test_modules_called_on_worker_threads_fire_like_pytorch_in_any_order():
    for _ in range(3):  # threads interleave differently from run to run
        plain, _ = plain_firings(seeded(ThreadedBranches)(), (randn(2, 3, requires_grad=True)(),))
        events = [e for e in record_all(seeded(ThreadedBranches)(), randn(2, 3, requires_grad=True)()).events if e.hook in MODULE_HOOKS]
        assert sorted(f.key() for f in plain) == sorted(engine_firings(SimpleNamespace(events=events)))
        by_key = {(e.hook, e.module, e.call): e for e in events}
        for f in plain:
            for record, tensor in zip(by_key[(f.hook, f.module, f.call)].tensors, f.tensors):
                assert_record_matches(record, tensor)
        order = [(e.hook, e.module) for e in events]
        for i in range(3):
            assert order.index(("backward", f"branches.{i}")) < order.index(("backward_pre", "stem"))
            assert order.index(("backward_pre", f"branches.{i}")) > order.index(("backward", "head"))
        # One index each, in order (legacy firings recorded: counted they take numbers anyway).
        every = hooktui.record(seeded(ThreadedBranches)(), randn(2, 3)(), legacy=True).events
        assert [e.index for e in every] == list(range(len(every)))


# 5. An input used only without a gradient (a mask): PyTorch's input wrapper passes zeros on
# for it, so the module that made it fires, with zeros.
class Masked(nn.Module):
    def forward(self, x, y):
        return x * (y > 0)


class MaskedParent(nn.Module):
    def __init__(self, feed_gate):
        super().__init__()
        self.feed_gate = feed_gate
        self.stem = nn.Linear(3, 3)
        self.value = nn.Linear(3, 3)
        self.gate = nn.Sequential(nn.Linear(3, 3), nn.Tanh())
        self.masked = Masked()

    def forward(self, x):
        h = self.stem(x)
        return self.masked(self.value(h), self.gate(h if self.feed_gate else x))


@pytest.mark.parametrize("feed_gate", [True, False], ids=["gate-input-needs-grad", "gate-fed-plain-data"])
def test_a_module_whose_output_is_only_a_mask_fires_with_zeros(feed_gate):
    events = assert_same_as_pytorch(seeded(MaskedParent, feed_gate), randn(2, 3))
    pre = firing(events, "backward_pre", "gate")
    assert torch.equal(values(pre.tensors[0]), torch.zeros(2, 3))
    assert any("used without a gradient" in note for note in pre.notes)
    grad_input = firing(events, "backward", "gate.0").tensors[0]
    if feed_gate:
        assert torch.equal(values(grad_input), torch.zeros(2, 3))
    else:
        assert grad_input.shape is None  # its input needs no grad: None, fired early


# 6. torch.vmap / torch.func over a module call: the hooks see wrappers that die with the
# transform; the records hold the values under them (every sample), and say so.
class VmappedChild(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(3, 2)
        self.head = nn.Linear(2, 1)

    def forward(self, x):
        return self.head(torch.vmap(self.net)(x))


def test_a_vmapped_child_records_every_sample_and_the_rest_fires_like_pytorch():
    events = assert_same_as_pytorch(seeded(VmappedChild), randn(4, 3), ignore=lambda hook, module: module == "net")
    trace = record_all(seeded(VmappedChild)(), randn(4, 3)())
    assert all(e.to_dict() for e in trace.events)  # nothing escaped the transform
    forward = firing(trace.events, "forward", "net")
    x, net = randn(4, 3)(), seeded(VmappedChild)().net
    assert forward.tensors[0].shape == [4, 3] and torch.allclose(values(forward.tensors[0]), x)
    assert torch.allclose(values(forward.tensors[1]), net(x).detach(), atol=1e-6)
    assert "the hook sees one sample, shape [3]" in forward.tensors[0].note
    assert firing(events, "backward", "head").tensors[0].shape == [4, 2]


class PerSampleGrads(nn.Module):
    """Per-sample gradient norms (torch.func.grad under vmap) as a regulariser."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(3, 2), nn.Tanh())
        self.head = nn.Linear(3, 1)

    def forward(self, x):
        params = {k: v.detach() for k, v in self.body.named_parameters()}

        def loss_one(p, xi):
            return torch.func.functional_call(self.body, p, (xi.unsqueeze(0),)).pow(2).sum()

        g = torch.vmap(torch.func.grad(loss_one), in_dims=(None, 0))(params, x)
        return self.head(x).sum() + g["0.weight"].pow(2).sum()


def test_per_sample_gradients_under_vmap_and_grad_are_recorded_unwrapped():
    trace = record_all(seeded(PerSampleGrads)(), randn(4, 3)())
    assert not trace.failed, trace.error
    assert all(e.to_dict() for e in trace.events)
    body = seeded(PerSampleGrads)().body
    out = body(randn(4, 3)()).detach()
    pre = firing(trace.events, "backward_pre", "body.1")
    assert pre.tensors[0].shape == [4, 1, 2]  # 4 samples of the [1, 2] the hook sees
    assert torch.allclose(values(pre.tensors[0]).reshape(4, 2), 2 * out, atol=1e-6)  # d(out^2)/d out
    assert "gradient transform" in pre.tensors[0].note


# 7. A torch.jit.script child: PyTorch refuses hooks on it; everything else is traced.
class WithScriptedBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.pre = nn.Linear(3, 3)
        self.block = torch.jit.script(nn.Sequential(nn.Linear(3, 3), nn.ReLU()))
        self.out = nn.Linear(3, 1)

    def forward(self, x):
        return self.out(self.block(self.pre(x)))


def test_a_scripted_child_has_no_firings_and_its_parent_says_why():
    events = assert_same_as_pytorch(seeded(WithScriptedBlock), randn(2, 3, requires_grad=True))
    assert not [e for e in events if e.module.startswith("block")]
    root = firing(events, "forward", "")
    assert any("block is a TorchScript module" in note for note in root.notes)
    model = seeded(WithScriptedBlock)()
    hooktui.record(model, randn(2, 3)())
    assert not hooks_left(model)


# 8. A packed sequence: the data inside the PackedSequence requires grad, but PyTorch's hooks
# see only top-level tensors, so for them the call has no input needing grad.
class PackedEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 5, batch_first=True)

    def forward(self, packed):
        _, (h, _) = self.lstm(packed)
        return h[-1]


class PackedModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(3, 4)
        self.encoder = PackedEncoder()
        self.head = nn.Linear(5, 1)

    def forward(self, x):
        from torch.nn.utils.rnn import pack_padded_sequence

        packed = pack_padded_sequence(self.embed(x), torch.tensor([4, 2, 3]), batch_first=True, enforce_sorted=False)
        return self.head(self.encoder(packed))


def test_a_packed_sequence_input_fires_early_and_says_its_data_needs_grad():
    # The LSTM returns (PackedSequence, (h, c)): no top-level tensor, so PyTorch's hooks never
    # fire its backward; hooktui's do, with a note saying so.
    events = assert_same_as_pytorch(seeded(PackedModel), randn(3, 4, 3),
                                    engine_only=lambda e: e.module == "encoder.lstm" and e.hook.startswith("backward"))
    encoder = firing(events, "backward", "encoder")
    assert encoder.tensors[0].shape is None
    early = next(n for n in encoder.notes if n.startswith("fired early"))
    assert "args[0][0] does, nested inside an argument" in early and "none of its positional inputs" not in early
    grad = firing(events, "backward_pre", "embed").tensors[0]
    assert grad.shape == [3, 4, 4] and grad.stats.max != 0  # the packed data's gradient reached the layer before


class GradNormPenalty(nn.Module):
    """A penalty on the parameters' gradient norm (third derivatives of GELU / Softplus too)."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3, 4), nn.GELU(), nn.Linear(4, 4), nn.Softplus(), nn.Linear(4, 1))

    def forward(self, x):
        loss = self.net(x).pow(2).sum()
        grads = torch.autograd.grad(loss, list(self.net.parameters()), create_graph=True)
        (dx,) = torch.autograd.grad(sum(g.pow(2).sum() for g in grads), x, create_graph=True)
        return loss + dx.pow(2).sum()


def test_a_gradient_norm_penalty_and_a_third_derivative_match_pytorch():
    def build():
        torch.manual_seed(0)
        return GradNormPenalty().double()

    def inputs():
        return torch.randn(2, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64).requires_grad_()

    assert_same_as_pytorch(build, inputs, lambda loss: loss)


def test_a_scripted_root_has_parameter_gradients_only():
    model = torch.jit.script(nn.Sequential(nn.Linear(3, 1)))
    trace = hooktui.record(model, randn(2, 3)())
    assert not trace.failed
    assert {e.hook for e in trace.events} == {"param_grad"}


class SumsOnWorkers(nn.Module):
    """An op run on a worker thread outside any module call (`h.sum()`), on the output of a
    call of the run's thread."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(3, 4)
        self.branches = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
        self.head = nn.Linear(8, 1)

    def forward(self, x):
        h = self.stem(x)
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(2) as pool:  # fresh threads: their counters start from 0 again
            outs = list(pool.map(lambda branch: h.sum() * branch(h), self.branches))
        return self.head(torch.cat(outs, -1))


def test_a_use_on_a_worker_thread_outside_module_calls_is_right_or_noted():
    # Recorded from a fresh thread too, so that the numbers collide: the documented exception.
    import threading

    box = {}
    worker = threading.Thread(target=lambda: box.update(trace=record_all(seeded(SumsOnWorkers)(), randn(2, 3)())))
    worker.start()
    worker.join()
    plain, _ = plain_firings(seeded(SumsOnWorkers)(), (randn(2, 3)(),))
    events = box["trace"].events
    for f in plain:
        if f.hook != "backward_pre":
            continue
        got = firing(events, "backward_pre", f.module, f.call)
        if not torch.allclose(values(got.tensors[0]), f.tensors[0], atol=1e-6):
            assert any("judged to be inside this call by their autograd sequence number" in n for n in got.notes), f.module


@pytest.mark.parametrize("pattern", ["grad_inside_forward", "plain"])
def test_under_a_default_device_every_firing_comes_once(pattern):
    """`torch.set_default_device(...)` (common on GPU boxes) or `with torch.device(...)` puts
    a TorchFunctionMode in front of torch.autograd.grad/backward, which dispatches the call
    again: each backward firing came twice. On the CPU the mode is the same one."""
    with torch.device("cpu"):
        if pattern == "grad_inside_forward":
            def make():
                g = torch.Generator().manual_seed(1)
                return torch.rand(5, 1, generator=g).requires_grad_()

            assert_same_as_pytorch(seeded(Physics), make, lambda out: out[0].pow(2).sum() + out[1].pow(2).sum())
        else:
            def build():
                torch.manual_seed(0)
                return nn.Sequential(nn.Linear(3, 4), nn.GELU(), nn.Linear(4, 1))

            assert_same_as_pytorch(build, lambda: torch.randn(2, 3, generator=torch.Generator().manual_seed(2)))
