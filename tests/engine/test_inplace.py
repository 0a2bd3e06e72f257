"""Models where PyTorch's full backward hooks break (in-place ops on hooked outputs):
hooktui traces them unchanged, every module fires backward_pre and backward, and the
gradients equal independently computed ones:

- PyTorch's full hooks on an out-of-place twin (same weights, `inplace=False`,
  `h = h + y`): the same maths, so the same grads;
- `output.register_hook` in a plain forward hook on the in-place model itself: a tensor
  hook binds to the node current at registration, so it gets d loss / d (the value the
  module returned), before any later in-place op;
- ReLU's own rule: grad_in = grad_out * (out > 0).
"""


import pytest
import torch
from torch import nn

import hooktui
from plain_hooks import assert_same_as_pytorch, hooks_left, load_sample, plain_firings, record_all

load = load_sample


class AddInPlace(nn.Module):
    def __init__(self, inplace=True):
        super().__init__()
        self.inplace = inplace
        self.fc1 = nn.Linear(4, 4)
        self.fc2 = nn.Linear(4, 4)
        self.fc3 = nn.Linear(4, 2)

    def forward(self, x):
        h = self.fc1(x)
        if self.inplace:
            h += self.fc2(x)  # in place on fc1's output
        else:
            h = h + self.fc2(x)
        return self.fc3(torch.tanh(h))


class BasicBlock(nn.Module):
    """torchvision's ResNet BasicBlock: in-place ReLU and `out += identity`."""

    def __init__(self, cin, cout, stride=1, inplace=True):
        super().__init__()
        self.inplace = inplace
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=inplace)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        if self.inplace:
            out += identity
        else:
            out = out + identity
        return self.relu(out)  # the block's relu is called twice


class TinyResNet(nn.Module):
    def __init__(self, inplace=True):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(inplace=inplace))
        self.layer1 = BasicBlock(4, 4, inplace=inplace)
        self.layer2 = BasicBlock(4, 8, stride=2, inplace=inplace)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        x = self.layer2(self.layer1(self.stem(x)))
        return self.fc(torch.flatten(self.pool(x), 1))


def _twins(cls):
    def build():
        torch.manual_seed(0)
        return cls(inplace=True)

    def build_plain():
        torch.manual_seed(0)
        return cls(inplace=False)

    return build, build_plain


def _cnn_twins():
    cnn = load("cnn")

    def build_plain():
        model = cnn.build_model()
        for m in model.modules():
            if isinstance(m, nn.ReLU):
                m.inplace = False
        return model

    return cnn.build_model, build_plain, cnn.example_inputs, cnn.loss_fn


def _x(*shape):
    return lambda: torch.randn(*shape, generator=torch.Generator().manual_seed(3))


CASES = {
    "cnn": _cnn_twins,
    "add_inplace": lambda: (*_twins(AddInPlace), _x(2, 4), None),
    "resnet": lambda: (*_twins(TinyResNet), _x(2, 3, 8, 8), None),
}


@pytest.mark.parametrize("case", CASES)
def test_plain_full_hooks_break_on_it(case):
    build, _, make_inputs, loss_fn = CASES[case]()
    with pytest.raises(RuntimeError, match="BackwardHookFunction"):
        plain_firings(build(), (make_inputs(),), loss_fn=loss_fn)


@pytest.mark.parametrize("case", CASES)
def test_same_firings_and_grads_as_full_hooks_on_the_out_of_place_twin(case):
    build, build_plain, make_inputs, loss_fn = CASES[case]()
    model = build()
    events = assert_same_as_pytorch(build, make_inputs, loss_fn, build_plain=build_plain)
    calls = {(e.module, e.call) for e in events if e.hook == "forward"}
    for module, call in calls:
        hooks = [e.hook for e in events if (e.module, e.call) == (module, call) and e.phase == "backward"]
        assert hooks == ["backward_pre", "backward"], (module, call)
    assert {m for m, _ in calls} == {name for name, _ in model.named_modules()}


@pytest.mark.parametrize("case", CASES)
def test_grad_output_equals_a_tensor_hook_on_the_returned_value(case):
    build, _, make_inputs, loss_fn = CASES[case]()
    reference = build()
    names = {id(m): n for n, m in reference.named_modules()}
    counts, grads = {}, {}

    def capture(module, args, output):
        name = names[id(module)]
        call = counts.get(name, 0)
        counts[name] = call + 1
        if output.requires_grad:
            output.register_hook(lambda g, k=(name, call): grads.__setitem__(k, g.clone()))

    handles = [m.register_forward_hook(capture) for m in reference.modules()]
    out = reference(make_inputs())
    (loss_fn(out) if loss_fn else out.sum()).backward()
    for h in handles:
        h.remove()

    trace = record_all(build(), make_inputs(), loss_fn)
    pre = {(e.module, e.call): e.tensors[0] for e in trace.events if e.hook == "backward_pre"}
    assert pre.keys() == grads.keys()
    for key, record in pre.items():
        assert torch.allclose(torch.tensor(record.values).reshape(record.shape), grads[key].float(), rtol=1e-5, atol=1e-7), key


@pytest.mark.parametrize("case", CASES)
def test_relu_grad_in_is_grad_out_masked_by_its_output(case):
    build, _, make_inputs, loss_fn = CASES[case]()
    model = build()
    relus = {n for n, m in model.named_modules() if isinstance(m, nn.ReLU)}
    trace = record_all(model, make_inputs(), loss_fn)
    by = {(e.hook, e.module, e.call): e for e in trace.events}
    checked = 0
    for (hook, module, call), event in by.items():
        if hook != "backward" or module not in relus:
            continue
        out = torch.tensor(by[("forward", module, call)].tensors[-1].values)
        grad_out = torch.tensor(by[("backward_pre", module, call)].tensors[0].values)
        grad_in = torch.tensor(event.tensors[0].values)
        assert torch.equal(grad_in, grad_out * (out > 0)), (module, call)
        checked += 1
    assert checked == len([k for k in by if k[0] == "forward" and k[1] in relus])
    assert hooks_left(model) == []


def test_inplace_model_output_unchanged_by_tracing():
    torch.manual_seed(0)
    model = TinyResNet().eval()
    x = _x(2, 3, 8, 8)()
    with torch.no_grad():
        expected = model(x)
    trace = hooktui.record(model, x)
    assert torch.equal(trace.output.detach(), expected)
