"""Models where PyTorch's full module backward hooks work: hooktui fires exactly what
they fire (sequence, call numbers, None / zero grads, values, grad_fn names).

Each model is built twice from the same seed; one copy gets plain PyTorch hooks
(plain_hooks.py), the other is traced by hooktui.
"""

import torch
from torch import nn

import hooktui
from plain_hooks import MODULE_HOOKS, assert_same_as_pytorch, plain_firings, randn, seeded


class ConvNet(nn.Module):
    """No in-place ops: PyTorch's full hooks work on it."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(4, 6, 3), nn.ReLU(),
        )
        self.head = nn.Linear(6 * 2 * 2, 3)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


def test_conv_net():
    events = assert_same_as_pytorch(seeded(ConvNet), randn(2, 3, 8, 8))
    assert sum(e.hook == "backward" for e in events) == 9  # every module, including the root


class Mix(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.tensor([1.5, -2.0, 0.5]))

    def forward(self, a, b):
        return a * self.w + b * b


class TwoInputs(nn.Module):
    """mix(h, bias): h requires grad, bias (a plain float tensor) does not."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.mix = Mix()
        self.register_buffer("bias", torch.tensor([[0.1, 0.2, 0.3]]))

    def forward(self, x):
        return self.mix(self.fc(x), self.bias.expand(2, 3))


def test_input_that_does_not_require_grad_beside_one_that_does_gets_zeros():
    events = assert_same_as_pytorch(seeded(TwoInputs), randn(2, 3))
    firings, _ = plain_firings(seeded(TwoInputs)(), (randn(2, 3)(),))
    plain = next(f for f in firings if f.hook == "backward" and f.module == "mix")
    assert torch.equal(plain.tensors[1], torch.zeros(2, 3))  # what PyTorch does
    mix = next(e for e in events if e.hook == "backward" and e.module == "mix")
    assert mix.tensors[1].shape == [2, 3] and mix.tensors[1].values == [0.0] * 6
    assert mix.tensors[1].stats.zeros == 6
    assert mix.tensors[1].note  # says why it is zeros


class Shared(nn.Module):
    """One Linear called three times (shared weights)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.out = nn.Linear(4, 1)

    def forward(self, x):
        for _ in range(3):
            x = torch.tanh(self.fc(x))
        return self.out(x)


def test_module_called_three_times():
    events = assert_same_as_pytorch(seeded(Shared), randn(2, 4))
    fc = [(e.hook, e.call) for e in events if e.module == "fc"]
    assert fc == [
        ("forward_pre", 0), ("forward", 0), ("forward_pre", 1), ("forward", 1), ("forward_pre", 2), ("forward", 2),
        ("backward_pre", 2), ("backward", 2), ("backward_pre", 1), ("backward", 1), ("backward_pre", 0), ("backward", 0),
    ]


class Scale(nn.Module):
    def forward(self, x, factor, shift=None):
        x = x * (2.0 if factor is None else factor)
        return x if shift is None else x + shift


class NonTensorArgs(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.scale = Scale()

    def forward(self, x):
        h = self.scale(self.fc(x), None)
        return self.scale(h, 3.0, None)


def test_non_tensor_positional_args_get_none():
    events = assert_same_as_pytorch(seeded(NonTensorArgs), randn(2, 3))
    for event in (e for e in events if e.hook == "backward" and e.module == "scale"):
        assert [t.shape for t in event.tensors][1:] == [None] * (len(event.tensors) - 1)
        assert "not a tensor" in event.tensors[1].missing


class Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.fc2 = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def test_input_that_requires_grad():
    """No early firing: the root's and fc1's grad_input is d loss / d x."""
    events = assert_same_as_pytorch(seeded(Plain), randn(2, 3, requires_grad=True))
    x = randn(2, 3, requires_grad=True)()
    seeded(Plain)()(x).sum().backward()
    for module in ("", "fc1"):
        event = next(e for e in events if e.hook == "backward" and e.module == module)
        assert not event.notes
        assert torch.allclose(torch.tensor(event.tensors[0].values), x.grad.reshape(-1))
    # The root's backward is its last firing: it waits for its children.
    assert (events[-1].hook, events[-1].module) == ("backward", "")


class TupleOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        h = self.fc(x)
        return h * 2, h.sum(-1)  # the second output is left out of the loss below


class UsesFirst(nn.Module):
    def __init__(self):
        super().__init__()
        self.split = TupleOut()

    def forward(self, x):
        a, _ = self.split(x)
        return a


def test_output_left_out_of_the_loss_gets_no_grad():
    events = assert_same_as_pytorch(seeded(UsesFirst), randn(2, 3))
    pre = next(e for e in events if e.hook == "backward_pre" and e.module == "split")
    assert pre.tensors[0].shape == [2, 3] and pre.tensors[1].shape is None
    assert pre.tensors[1].missing


class Frozen(nn.Module):
    """A submodule under no_grad, a parameterless module on raw input, an Identity."""

    def __init__(self):
        super().__init__()
        self.act = nn.Tanh()
        self.frozen = nn.Linear(3, 3)
        self.skip = nn.Identity()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        a = self.act(x)  # output needs no grad: no backward firing
        with torch.no_grad():
            b = self.frozen(a)
        return self.fc(self.skip(a + b * self.fc.weight[0]))


def test_no_grad_submodule_and_identity():
    events = assert_same_as_pytorch(seeded(Frozen), randn(2, 3))
    backward = {e.module for e in events if e.phase == "backward"}
    assert backward == {"", "skip", "fc"}
    forward = {e.module for e in events if e.hook == "forward"}
    assert {"act", "frozen"} <= forward


class IntArg(nn.Module):
    def forward(self, h, index):
        return h[:, index] * 2


class WithIndex(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.pick = IntArg()

    def forward(self, x):
        return self.pick(self.fc(x), torch.tensor([0, 2]))


def test_integer_tensor_arg_beside_one_that_requires_grad():
    assert_same_as_pytorch(seeded(WithIndex), randn(2, 3))


class Nested(nn.Module):
    """Wrappers whose output is their last child's output and whose input feeds their first child."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Sequential(nn.Linear(3, 3), nn.Tanh()), nn.Sequential(nn.Linear(3, 2)))

    def forward(self, x):
        return self.body(x)


def test_nested_sequentials():
    assert_same_as_pytorch(seeded(Nested), randn(2, 3, requires_grad=True))
    assert_same_as_pytorch(seeded(Nested), randn(2, 3))


class Twice(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.mix = Mix()

    def forward(self, x):
        h = self.fc(x)
        return self.mix(h, h)


def test_same_tensor_passed_twice():
    """Cannot be matched: PyTorch's full hook wraps each argument in its own view, so it
    splits d loss / d h into the share through `a` and through `b`; node hooks see one
    tensor. hooktui gives the whole gradient through the call to the first occurrence
    and says so for the second."""
    firings, _ = plain_firings(seeded(Twice)(), (randn(2, 3)(),))
    plain = next(f for f in firings if f.hook == "backward" and f.module == "mix")
    trace = hooktui.record(seeded(Twice)(), randn(2, 3)())
    event = next(e for e in trace.events if e.hook == "backward" and e.module == "mix")
    total = (plain.tensors[0] + plain.tensors[1]).reshape(-1)
    assert torch.allclose(torch.tensor(event.tensors[0].values, dtype=torch.float32), total)
    assert event.tensors[1].shape is None and "args[0]" in event.tensors[1].missing
    # Everything else still matches PyTorch's sequence.
    keys = [(e.hook, e.module, e.call) for e in trace.events if e.hook in MODULE_HOOKS]
    assert keys == [(f.hook, f.module, f.call) for f in firings]


class Pass(nn.Module):
    def forward(self, a, b):
        return a * 2, b  # b comes back unchanged: no node of this call consumes it


class WithPass(nn.Module):
    def __init__(self):
        super().__init__()
        self.fa = nn.Linear(3, 3)
        self.fb = nn.Linear(3, 3)
        self.p = Pass()

    def forward(self, x):
        a, b = self.p(self.fa(x), self.fb(x))
        return a + 3 * b


def test_input_returned_unchanged_beside_a_computed_output():
    """b has no consumer node inside p: its grad_input is p's grad_output[1], and p's
    backward still comes after its backward_pre and before fb's (PyTorch routes fb's
    gradient through p's wrappers)."""
    events = assert_same_as_pytorch(seeded(WithPass), randn(2, 3))
    p = next(e for e in events if e.hook == "backward" and e.module == "p")
    assert p.tensors[1].values == [3.0] * 6
    order = [(e.hook, e.module) for e in events if e.phase == "backward"]
    assert order.index(("backward_pre", "p")) < order.index(("backward", "p"))


class IgnoresInput(nn.Module):
    def __init__(self):
        super().__init__()
        self.p = nn.Parameter(torch.ones(3))

    def forward(self, h, unused):
        return self.p * 2 + 0 * h.sum()  # `unused` requires grad but never reaches the output


class WithUnused(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.ign = IgnoresInput()
        self.only_param = OnlyParam()

    def forward(self, x):
        h = self.fc(x)
        return self.ign(h, h * 2) + self.only_param(h)


class OnlyParam(nn.Module):
    def __init__(self):
        super().__init__()
        self.p = nn.Parameter(torch.ones(3))

    def forward(self, h):
        return self.p * 3  # h requires grad, the output does not depend on it


def test_unused_input_gets_zeros_and_unreached_inputs_mean_no_backward_firing():
    events = assert_same_as_pytorch(seeded(WithUnused), randn(2, 3))
    ign = next(e for e in events if e.hook == "backward" and e.module == "ign")
    assert ign.tensors[1].values == [0.0] * 6  # PyTorch passes zeros, not None
    # PyTorch's full backward hook never fires for only_param: no grad reaches its input.
    assert [e.hook for e in events if e.module == "only_param"] == ["forward_pre", "forward", "backward_pre"]


class ReturnsIntermediate(nn.Module):
    """Returns `h` and also feeds it to `head`: h's grad_output is only what comes from
    outside the module, not the share that flows back through `head` inside it."""

    def __init__(self):
        super().__init__()
        self.ln = nn.Linear(3, 3)
        self.head = nn.Linear(3, 2)

    def forward(self, x):
        h = self.ln(x)
        return self.head(h), h


def test_output_also_used_inside_the_module():
    # The loss uses both outputs: the root's grad_output[1] is ones (d sum / d h), and it
    # fires before head's backward, as PyTorch's does.
    events = assert_same_as_pytorch(seeded(ReturnsIntermediate), randn(2, 3))
    root = next(e for e in events if e.hook == "backward_pre" and e.module == "")
    assert root.tensors[1].values == [1.0] * 6
    # The loss uses only the first output: no gradient reaches h from outside.
    events = assert_same_as_pytorch(seeded(ReturnsIntermediate), randn(2, 3), loss_fn=lambda out: out[0].sum())
    root = next(e for e in events if e.hook == "backward_pre" and e.module == "")
    assert root.tensors[1].shape is None


class ReturnsLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 1)

    def forward(self, x):
        return self.fc(x).pow(2).mean()


def test_model_output_is_the_loss():
    events = assert_same_as_pytorch(seeded(ReturnsLoss), randn(4, 3), loss_fn=lambda out: out)
    assert next(e for e in events if e.hook == "backward_pre").tensors[0].values == [1.0]


class Branches(nn.Module):
    """The input feeds three children and a skip; their outputs are concatenated."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 3)
        self.b = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3))
        self.c = nn.Linear(4, 2)
        self.gate = nn.Parameter(torch.tensor(0.5))
        self.out = nn.Linear(12, 2)

    def forward(self, x):
        h = torch.cat([self.a(x), self.b(x), self.c(x) * self.gate, x], dim=-1)
        return self.out(h)


def test_branches_from_one_input():
    assert_same_as_pytorch(seeded(Branches), randn(2, 4, requires_grad=True))
    assert_same_as_pytorch(seeded(Branches), randn(2, 4))


def test_residual_net_without_inplace_ops():
    from test_inplace import TinyResNet

    assert_same_as_pytorch(seeded(TinyResNet, False), randn(2, 3, 8, 8))
