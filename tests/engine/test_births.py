"""`born_only` non-finite breakpoints (issue 25.8): `c` goes from one newly born NaN to the
next, not to every firing that carries the first one on.

The model has separate births by construction: two branches of a finite hidden state each
make their own NaN in forward (log and sqrt of negative values), and sqrt's backward makes a
third from finite gradients. Where they are born is computed with plain PyTorch hooks
(a module whose output is not finite while its input is; a module whose grad_input is not
finite while its grad_output is), never from hooktui's records."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from hooktui.cli import parse
from hooktui.commands.breaks import value_breakpoints
from hooktui.engine.analysis.breakpoints import Breakpoint, BreakpointList, parse_breakpoint
from hooktui.ui.history import History

from test_breakpoints import run_to_stops

# The plain hooks below sit on modules fed plain data: PyTorch warns that theirs fire early.
pytestmark = pytest.mark.filterwarnings("ignore:Full backward hook is firing")


class Log(nn.Module):
    def forward(self, x):
        return torch.log(x - 100.0)  # x is small: NaN everywhere; log's gradient stays finite


class Sqrt(nn.Module):
    def forward(self, x):
        return torch.sqrt(x.abs().neg() - 1.0)  # NaN, and NaN gradients in backward


class TwoBranches(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(4, 4)
        self.bad1 = Log()
        self.bad2 = Sqrt()
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        h = self.lin(x)
        return self.head(self.bad1(h) + self.bad2(h))


def inputs():
    return torch.ones(1, 4)


def plain_births() -> list[tuple[str, str]]:
    """(module, phase) of every leaf call that turns finite values into non-finite ones."""
    model = TwoBranches()
    found, handles = [], []
    bad = lambda ts: any(t is not None and not torch.isfinite(t).all() for t in ts)  # noqa: E731
    for name, module in model.named_children():
        handles.append(module.register_forward_hook(
            lambda m, args, out, name=name: found.append((name, "forward")) if bad([out]) and not bad(args) else None))
        handles.append(module.register_full_backward_hook(
            lambda m, gi, go, name=name: found.append((name, "backward")) if bad(gi) and not bad(go) else None))
    model(inputs()).sum().backward()
    for handle in handles:
        handle.remove()
    return found


def test_born_only_stops_at_each_birth_and_nowhere_else():
    expected = plain_births()
    assert expected == [("bad1", "forward"), ("bad2", "forward"), ("bad2", "backward")]  # the model is as described
    _, stops = run_to_stops(TwoBranches(), inputs(), [Breakpoint.nonfinite(born_only=True)])
    assert [(e.module, e.phase) for e, _ in stops] == expected
    # In backward the hunt shows the node inside bad2 that made it (or bad2's backward firing).
    assert stops[2][0].hook in ("node", "backward") and "born here" in stops[2][1].reason
    # The plain breakpoint stops at every firing that carries a NaN: many more.
    _, every = run_to_stops(TwoBranches(), inputs(), [Breakpoint.nonfinite()])
    assert len(every) > len(stops) + 3


def test_born_only_walks_a_recorded_history_to_the_same_firings():
    session, live = run_to_stops(TwoBranches(), inputs(), [Breakpoint.nonfinite(born_only=True)])
    events = session.trace.events  # the whole run: it went on to the end after each stop
    bp = Breakpoint.nonfinite(born_only=True)
    history = History()
    history.extend(events)
    history.move(0)
    breakpoints = BreakpointList()
    breakpoints.add(bp)
    walked = []
    while (found := history.find_stop(breakpoints, False)) is not None:
        position, stop = found
        walked.append((history.events[position].key, stop.reason))
        history.move(position)
    assert walked == [(e.key, s.reason) for e, s in live]


def test_spec_and_breakpoint_value():
    assert parse_breakpoint("nan born") == Breakpoint.nonfinite(born_only=True)
    assert parse_breakpoint("nonfinite nan-only born in features*") == Breakpoint.nonfinite("features*", inf=False, born_only=True)
    assert parse_breakpoint("nan born").label == "newly born NaN/Inf"
    assert len({Breakpoint.nonfinite(), Breakpoint.nonfinite(born_only=True)}) == 2  # frozen, hashable, distinct


def test_the_command_line_flag_sets_a_born_only_breakpoint():
    options = parse(["open", "m.py", "--break-nonfinite-born", "--nan-only", "--in", "features*"]).options
    assert value_breakpoints(options.breaks) == [Breakpoint.nonfinite("features*", inf=False, born_only=True)]
