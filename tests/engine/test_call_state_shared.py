"""The per-call state shares what it can (engine/capture/shared_values.py): a module call
with no entry of some kind (no duplicated input, no input hooked before the call, no
gradient changed by the module's own hook) holds the one shared empty dict, `NOTHING`, and
a call that gets an entry builds a dict of its own. Each case that writes such an entry
runs here, compared value by value with PyTorch's own full hooks (plain_hooks.py); the
shared dict is still empty afterwards, and refuses to be written. (A duplicated input, the
third writer, is test_parity_models.py's `test_same_tensor_passed_twice`.)"""

import pytest
import torch
from torch import nn

from hooktui.engine.capture.shared_values import NOTHING, Kept
from plain_hooks import assert_same_as_pytorch, randn, seeded


class Scale(nn.Module):
    def forward(self, x):
        return x * 3


class HookedBeforeTheCall(nn.Module):
    """The caller hooks a tensor before passing it: the call counts that input's hooks."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.scale = Scale()
        self.out = nn.Linear(3, 2)

    def forward(self, x):
        h = self.fc(x)
        h.register_hook(lambda g: g * 2)
        return self.out(self.scale(h))


class HooksItsOutput(nn.Module):
    """The module hooks its own output inside forward: what its backward consumes differs
    from grad_output (the pass keeps the gradient after that hook)."""

    def forward(self, x):
        y = x * 3
        y.register_hook(lambda g: g + 1)
        return y


class OwnOutputHooked(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.inner = HooksItsOutput()
        self.out = nn.Linear(3, 2)

    def forward(self, x):
        return self.out(self.inner(self.fc(x)))


@pytest.mark.parametrize("model", [HookedBeforeTheCall, OwnOutputHooked])
def test_calls_that_write_an_entry_build_their_own_and_fire_like_pytorch(model):
    events = assert_same_as_pytorch(seeded(model), randn(2, 3))
    assert not [n for e in events for n in e.notes if "hooktui failed" in str(n)]
    assert NOTHING == {} and len(NOTHING) == 0
    if model is OwnOutputHooked:
        pre = next(e for e in events if e.hook == "backward_pre" and e.module == "inner")
        assert any(t.name.endswith("after the module's hooks") for t in pre.tensors)


def test_the_shared_empty_dict_cannot_be_written():
    for write in (lambda d: d.__setitem__(0, 1), lambda d: d.update({0: 1}), lambda d: d.setdefault(0, 1),
                  lambda d: d.pop(0), lambda d: d.popitem(), lambda d: d.clear(), lambda d: d.__delitem__(0)):
        with pytest.raises(TypeError):
            write(NOTHING)
    with pytest.raises(TypeError):
        d = NOTHING
        d |= {0: 1}
    assert NOTHING == {} and NOTHING.get(0) is None and list(NOTHING.items()) == []


def test_kept_gives_the_first_equal_copy_and_never_another_kinds():
    kept = Kept(bound=2)
    first = (torch.Size([2, 3]), torch.float32, torch.device("cpu"))
    again = (torch.Size([2, 3]), torch.float32, torch.device("cpu"))
    assert kept(first) is first and kept(again) is first
    other = Kept()
    assert other(again) is again  # each kind its own
    assert kept([1]) == [1]  # unhashable: given back as it is

    class Ambiguous:  # compares like a tensor of several elements: bool() of it raises
        def __hash__(self):
            return 7

        def __eq__(self, other):
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")

    first_odd, second_odd = Ambiguous(), Ambiguous()
    assert kept(first_odd) is first_odd and kept(second_odd) is second_odd
    kept((1,))
    third = (torch.Size([4]), torch.float64, torch.device("cpu"))
    assert kept(third) is third  # past its bound it starts again
    assert kept(again) is again
