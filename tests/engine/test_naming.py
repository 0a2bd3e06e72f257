"""Where tensors sit in a call: kwargs, nested / dict / dataclass outputs; integer
inputs; no_grad submodules; call numbers of a module called several times."""

from dataclasses import dataclass

import torch
from torch import nn

import hooktui
from plain_hooks import MODULE_HOOKS, record_all


class Masked(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x, mask=None, *, scale=1.0):
        h = self.fc(x) * scale
        return h.masked_fill(mask, 0.0) if mask is not None else h


class Heads(nn.Module):
    def __init__(self):
        super().__init__()
        self.logits = nn.Linear(4, 3)

    def forward(self, h):
        return h.mean(-1), {"logits": self.logits(h), "extra": [h * 2, "not a tensor", None]}


@dataclass
class Output:
    hidden: torch.Tensor
    pooled: torch.Tensor
    note: str = "hi"


class Top(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 4)
        self.body = Masked()
        self.heads = Heads()

    def forward(self, input_ids, attention_mask):
        h = self.body(self.embed(input_ids), mask=attention_mask.unsqueeze(-1) == 0, scale=2.0)
        mean, out = self.heads(h)
        return Output(hidden=out["logits"], pooled=mean)


def inputs():
    ids = torch.tensor([[1, 2, 3], [4, 5, 0]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    return {"input_ids": ids, "attention_mask": mask}


def build():
    torch.manual_seed(0)
    return Top()


def names(event):
    return [t.name for t in event.tensors]


def find(events, hook, module, call=0):
    return next(e for e in events if (e.hook, e.module, e.call) == (hook, module, call))


def test_kwargs_and_nested_output_names():
    trace = hooktui.record(build(), inputs())
    assert not trace.failed, trace.error
    ev = trace.events
    assert names(find(ev, "forward_pre", "")) == ["kwargs['input_ids']", "kwargs['attention_mask']"]
    assert names(find(ev, "forward_pre", "body")) == ["args[0]", "kwargs['mask']"]
    assert names(find(ev, "forward", "heads")) == ["args[0]", "output[0]", "output[1]['logits']", "output[1]['extra'][0]"]
    assert names(find(ev, "forward", "")) == ["kwargs['input_ids']", "kwargs['attention_mask']", "output.hidden", "output.pooled"]
    mask = find(ev, "forward_pre", "body").tensors[1]
    assert mask.dtype == "bool" and mask.values == [0.0] * 5 + [1.0]


def test_grad_output_names_point_at_their_outputs_and_values_are_right():
    def loss_fn(out):
        return out.hidden.sum() * 3 + out.pooled.sum()

    trace = record_all(build(), inputs(), loss_fn)
    ev = trace.events
    heads = find(ev, "backward_pre", "heads")
    # PyTorch's slots: one per element of the output tuple, None for the nested dict;
    # the dict's tensors follow as extras.
    assert names(heads) == ["grad_output[0]", "grad_output[1]", "grad of output[1]['logits']", "grad of output[1]['extra'][0]"]
    assert [t.extra for t in heads.tensors] == [False, False, True, True]
    assert [t.target for t in heads.tensors] == ["output[0]", "output[1]", "output[1]['logits']", "output[1]['extra'][0]"]
    assert heads.tensors[0].values == [1.0] * 6  # d loss / d mean
    assert heads.tensors[1].shape is None and "nested dict" in heads.tensors[1].missing
    assert heads.tensors[2].values == [3.0] * 18  # d loss / d logits
    assert heads.tensors[3].shape is None and heads.tensors[3].missing  # h * 2 is not used by the loss
    root = find(ev, "backward_pre", "")
    assert [t.target for t in root.tensors] == ["output.hidden", "output.pooled"]
    assert all(t.extra for t in root.tensors)  # a dataclass output: PyTorch's hooks never fire
    # kwargs never get a grad_input (PyTorch's full hooks do not see them either); the
    # root's positional args are empty.
    assert find(ev, "backward", "").tensors == []
    body = find(ev, "backward", "body")
    assert names(body) == ["grad_input[0]"]

    # Independently: d loss / d (body's input) with autograd.
    model = build()
    seen = {}

    def grab(module, args, kwargs, out):
        args[0].retain_grad()
        seen["x"] = args[0]

    model.body.register_forward_hook(grab, with_kwargs=True)
    loss_fn(model(**inputs())).backward()
    got = torch.tensor(body.tensors[0].values).reshape(body.tensors[0].shape)
    assert torch.allclose(got, seen["x"].grad, atol=1e-6)


def test_integer_inputs_and_embedding():
    trace = hooktui.record(build(), inputs())
    ids = find(trace.events, "forward_pre", "embed").tensors[0]
    assert ids.dtype == "int64" and ids.requires_grad is False and ids.values == [1.0, 2.0, 3.0, 4.0, 5.0, 0.0]
    embed = find(trace.events, "backward", "embed")
    assert embed.tensors[0].shape is None and "does not require grad" in embed.tensors[0].missing


class Repeat(nn.Module):
    def __init__(self):
        super().__init__()
        self.step = nn.Linear(3, 3)
        self.frozen = nn.Linear(3, 3)

    def forward(self, x):
        with torch.no_grad():
            x = self.frozen(x)
        for _ in range(4):
            x = self.step(x)
        return x


def test_no_grad_submodule_fires_forward_only():
    torch.manual_seed(0)
    trace = hooktui.record(Repeat(), torch.ones(2, 3))
    frozen = [(e.hook, e.phase) for e in trace.events if e.module == "frozen"]
    assert frozen == [("forward_pre", "forward"), ("forward", "forward")]
    out = find(trace.events, "forward", "frozen")
    assert out.grad_fn is None and out.tensors[-1].requires_grad is False


def test_call_numbers_forward_and_reverse_in_backward():
    torch.manual_seed(0)
    model = Repeat()
    trace = record_all(model, torch.ones(2, 3))
    step = [(e.hook, e.call) for e in trace.events if e.module == "step" and e.hook in MODULE_HOOKS]
    assert step[:8] == [(h, c) for c in range(4) for h in ("forward_pre", "forward")]
    assert step[8:] == [(h, c) for c in (3, 2, 1, 0) for h in ("backward_pre", "backward")]
    # Each backward firing carries its own call's gradient: step k's grad_output is
    # W^T applied (3 - k) times to the ones the sum sends back.
    w = model.step.weight.detach()
    g = torch.ones(2, 3)
    for k in (3, 2, 1, 0):
        pre = find(trace.events, "backward_pre", "step", k)
        assert torch.allclose(torch.tensor(pre.tensors[0].values).reshape(2, 3), g, atol=1e-6), k
        assert pre.forward_index == find(trace.events, "forward", "step", k).index
        g = g @ w
    # The first call's input came out of no_grad: it needs no grad, so call 0 fires early.
    assert find(trace.events, "backward", "step", 0).notes
    assert not find(trace.events, "backward", "step", 1).notes


class TupleInput(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)

    def forward(self, pair, extra):
        a, b = pair
        return self.fc(a) + b + extra["bias"]


def test_args_and_kwargs_convention_and_nested_inputs():
    torch.manual_seed(0)
    a, b = torch.ones(1, 2), torch.zeros(1, 2)
    trace = hooktui.record(TupleInput(), (((a, b),), {"extra": {"bias": torch.full((1, 2), 0.5)}}))
    assert not trace.failed, trace.error
    assert names(find(trace.events, "forward_pre", "")) == ["args[0][0]", "args[0][1]", "kwargs['extra']['bias']"]
    # A tuple is not a tensor argument: PyTorch's full hook gives it None, so does hooktui.
    root = find(trace.events, "backward", "")
    assert root.tensors[0].shape is None and "not a tensor" in root.tensors[0].missing
