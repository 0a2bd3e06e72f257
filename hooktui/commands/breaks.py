"""The value breakpoints asked for on the command line (--break-nonfinite[-born], --break-above,
--break-if, narrowed by --in / --phase / --tensor)."""

from __future__ import annotations

from ..errors import UserError
from ..engine.analysis.breakpoints import Breakpoint
from .options import BreakOptions


def value_breakpoints(breaks: BreakOptions) -> list[Breakpoint]:
    where = {"module": breaks.module, "phase": breaks.phase}
    found = []
    if breaks.nonfinite or breaks.nonfinite_born:
        found.append(Breakpoint.nonfinite(tensor=breaks.tensor, inf=not breaks.nan_only, born_only=breaks.nonfinite_born, **where))
    for stat, bound in breaks.above:
        found.append(Breakpoint.threshold(bound, stat=stat, tensor=breaks.tensor, **where))
    if breaks.condition:
        try:
            found.append(Breakpoint.condition(breaks.condition, **where))
        except ValueError as exc:
            raise UserError(str(exc)) from exc
    return found
