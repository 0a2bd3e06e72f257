"""The value breakpoints asked for on the command line (--break-nonfinite[-born], --break-above,
--break-if, narrowed by --in / --phase / --tensor)."""

from __future__ import annotations

from ..errors import UserError
from ..engine.analysis.breakpoints import Breakpoint


def value_breakpoints(args) -> list[Breakpoint]:
    where = {"module": args.bp_module, "phase": args.phase}
    found = []
    if args.nonfinite or args.nonfinite_born:
        found.append(Breakpoint.nonfinite(tensor=args.bp_tensor, inf=not args.nan_only, born_only=args.nonfinite_born, **where))
    for stat, bound in args.above or ():
        found.append(Breakpoint.threshold(bound, stat=stat, tensor=args.bp_tensor, **where))
    if args.condition:
        try:
            found.append(Breakpoint.condition(args.condition, **where))
        except ValueError as exc:
            raise UserError(str(exc)) from exc
    return found
