"""torch.Tensor's hook registrations, patched while a run goes on, come back as torch had
them however the runs' ends interleave. An app's model thread still unwinding after its app
closed while the next run starts ended in the other order: the later run restored, for good,
the patch of the earlier one it had found (tests/loop/test_one_run.py saw it when
tests/ui/test_ui_hunt.py had run before it in the same process).
Expectations: torch's own functions, looked up before any run."""

import torch
from torch import nn

import hooktui
from hooktui.engine.capture.user_hooks import UserHooks

NAMES = ("register_hook", "register_post_accumulate_grad_hook")
TORCH_OWN = {name: getattr(torch.Tensor, name) for name in NAMES}


def _now() -> dict:
    return {name: getattr(torch.Tensor, name) for name in NAMES}


def test_runs_ending_in_another_order_than_they_started_leave_torchs_functions():
    first, second = UserHooks(nn.Linear(2, 2)), UserHooks(nn.Linear(2, 2))
    first.install(None)
    patched_by_first = _now()
    assert patched_by_first != TORCH_OWN
    second.install(None)
    patched_by_second = _now()
    assert patched_by_second != patched_by_first
    first.remove()  # the earlier run ends first
    assert _now() == patched_by_second  # the one still going keeps its patch
    second.remove()
    assert _now() == TORCH_OWN


def test_runs_ending_in_order_leave_torchs_functions_and_a_record_after_them_works():
    first, second = UserHooks(nn.Linear(2, 2)), UserHooks(nn.Linear(2, 2))
    first.install(None)
    second.install(None)
    second.remove()
    first.remove()
    first.remove()  # twice: nothing more
    assert _now() == TORCH_OWN
    model = nn.Linear(2, 1)
    seen = []
    x = torch.ones(1, 2, requires_grad=True)

    def hooked(m, args, out):
        out.register_hook(lambda g: seen.append(g.clone()))

    model.register_forward_hook(hooked)
    trace = hooktui.record(model, x)
    assert not trace.failed and len(seen) == 1  # the user's tensor hook ran once, through the patch
    assert _now() == TORCH_OWN
