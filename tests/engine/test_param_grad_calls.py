"""A param_grad firing of a module called several times (issue 25.11): PyTorch sums the
gradients of every call whose output the backward reaches into one AccumulateGrad run, so
the firing names those calls, and is filed under the last of them (not under the module's
latest call, which may be one the backward never reaches).

Which calls the backward reaches is found with plain PyTorch hooks: a tensor hook on each
call's output fires only if the gradient gets there."""

from __future__ import annotations

import torch
from torch import nn

from hooktui import record


class Shared(nn.Module):
    """One Linear called four times: calls 0 and 1 feed the loss, call 2 runs under no_grad,
    call 3 is computed with grad and thrown away."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.cell = nn.Linear(3, 3)

    def forward(self, x):
        h = self.cell(self.cell(x))
        with torch.no_grad():
            self.cell(h)
        self.cell(h)  # unused
        return h


def reached_calls() -> list[int]:
    model = Shared()
    reached, count = [], [0]

    def post(_module, _args, out):
        call = count[0]
        count[0] += 1
        if out.requires_grad:
            out.register_hook(lambda grad, call=call: reached.append(call))

    handle = model.cell.register_forward_hook(post)
    model(torch.ones(1, 3)).sum().backward()
    handle.remove()
    return sorted(reached)


def test_param_grad_of_a_shared_module_names_the_calls_it_sums():
    expected = reached_calls()
    assert expected == [0, 1]  # as built: not the no_grad call, not the unused one
    events = record(Shared(), torch.ones(1, 3)).events
    grads = [e for e in events if e.hook == "param_grad" and e.module == "cell"]
    forwards = {e.call: e.index for e in events if e.hook == "forward" and e.module == "cell"}
    assert len(grads) == 2  # weight and bias
    for event in grads:
        assert event.call == expected[-1] and event.forward_index == forwards[expected[-1]]
        assert any(f"accumulated over calls {expected[0]}..{expected[-1]} of this module" in note for note in event.notes)


def test_param_grad_of_a_module_called_once_has_no_such_note():
    class Once(nn.Module):
        def __init__(self):
            super().__init__()
            self.cell = nn.Linear(3, 3)

        def forward(self, x):
            return self.cell(x)

    events = record(Once(), torch.ones(1, 3)).events
    grads = [e for e in events if e.hook == "param_grad"]
    assert grads and all(e.call == 0 and not any("accumulated" in note for note in e.notes) for e in grads)
