"""One model of a firing: its kind, its number and who sees it. Every view asks here.

The numbering rule (README, "Commands", written there once):

- **Plain numbers** (`#17`): one counter per run, taken by every firing of the kinds that
  every run of the same model has — module hooks (`forward_pre`, `forward`, `backward_pre`,
  `backward`), `legacy_backward`, `param_grad`, `final_grad`, `user_hook` and the `error`
  that ends a failed run. A `legacy_backward` firing takes its number even where it is not
  recorded (`hooktui.guard`, a recorded `hooktui.debug`): the engine counts it there
  without building it. So a firing has the same number in `trace`, `trace --legacy`, the
  app, a saved file, the guard and debug; a view that hides legacy firings skips their
  numbers, and hiding or showing them never shifts the others.
- **Sub-numbers** (`#16.1`): `node_pre` / `node` firings exist only because of what a view
  asked for (stepping into a call with `s`, or a non-finite hunt naming the autograd node
  that made a NaN/Inf). The k-th of them after plain firing N is N.k (`index` N, `sub` k):
  they never take a number of the plain sequence, so hunting or stepping shifts nothing.

Visibility: a `legacy_backward` firing is hidden unless legacy firings are shown
(`--legacy`, `L` in the app); every other kind is shown. A value breakpoint never stops
at a legacy firing and "born" never names one: its gradients are those of the node it
sits on, which reach a shown firing (the `node` firing of a hunt, the module's `backward`).
So a stop, a "born" line and `view`'s opening firing always name a firing every view shows.

Nothing here imports torch: the trace table, `view` and `diff` use it without a model.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from typing import Literal, get_args

HookKind = Literal[
    "forward_pre", "forward", "backward_pre", "backward", "legacy_backward", "param_grad", "final_grad",
    "node_pre", "node", "user_hook", "error",
]
HOOK_KINDS: tuple[str, ...] = get_args(HookKind)

LEGACY = "legacy_backward"
NODE_KINDS = frozenset({"node_pre", "node"})


class Visibility(enum.Enum):
    """Who sees a firing of each kind (the `L` key and `--legacy` flip HIDDEN_LEGACY)."""

    SHOWN = "shown"  # module hooks, param_grad, final_grad, error: every view
    HIDDEN_LEGACY = "hidden legacy"  # legacy_backward: only with --legacy / L
    NODE = "node"  # node_pre / node: a sub-numbered firing (stepped into, or a hunt's node); shown
    USER_HOOK = "user hook"  # one of the model's own hooks ran; shown


class Numbering(enum.Enum):
    PLAIN = "plain"  # a number of the run's one counter
    SUB = "sub"  # N.k after plain firing N


def visibility(hook: str) -> Visibility:
    if hook == LEGACY:
        return Visibility.HIDDEN_LEGACY
    if hook in NODE_KINDS:
        return Visibility.NODE
    if hook == "user_hook":
        return Visibility.USER_HOOK
    return Visibility.SHOWN


def numbering(hook: str) -> Numbering:
    return Numbering.SUB if hook in NODE_KINDS else Numbering.PLAIN


def is_shown(hook: str, legacy_shown: bool = False) -> bool:
    """Whether a view shows a firing of this kind: all but legacy firings, and those too
    when legacy firings are shown."""
    return legacy_shown or hook != LEGACY


def hidden_kinds(legacy_shown: bool) -> frozenset[str]:
    """The hook kinds a view leaves out."""
    return frozenset() if legacy_shown else frozenset({LEGACY})


def can_stop_at(hook: str) -> bool:
    """Whether a value breakpoint (NaN/Inf, a bound) may stop at, and "born" may name, a
    firing of this kind: never a legacy firing (the same gradients reach a shown firing),
    an error or one of the model's own hooks."""
    return hook not in (LEGACY, "error", "user_hook")


def shown(events: Iterable, legacy_shown: bool = False) -> list:
    """The firings a view shows, in firing order."""
    return [e for e in events if is_shown(e.hook, legacy_shown)]


def visible_number(events: Sequence, key: tuple[int, int] | None, legacy_shown: bool = False) -> tuple[int, int] | None:
    """`key` (index, sub) when that firing is among `events` and shown; else the first shown
    firing after it (a view that cannot show a firing opens at the next one it can), or None."""
    if key is None:
        return None
    for event in events:
        if (event.index, event.sub) >= key and is_shown(event.hook, legacy_shown):
            return (event.index, event.sub)
    return None


class Counter:
    """A run's firing numbers (not thread-safe on its own: the tracer takes them under its
    firing lock). `take(hook)` numbers a firing by its kind; `taken` is how many plain
    numbers are given so far (the next plain firing's number)."""

    __slots__ = ("taken", "_sub")

    def __init__(self) -> None:
        self.taken = 0
        self._sub = 0  # sub-number of the latest sub-numbered firing after plain firing taken - 1

    def take(self, hook: str) -> tuple[int, int]:
        if hook in NODE_KINDS:
            # After the last plain firing (N.1, N.2, ...): the plain sequence stays as without it.
            self._sub += 1
            return max(self.taken - 1, 0), self._sub
        index = self.taken
        self.taken, self._sub = index + 1, 0
        return index, 0

    @property
    def last(self) -> tuple[int, int] | None:
        """The latest number given, or None before the first."""
        return None if self.taken == 0 and self._sub == 0 else (max(self.taken - 1, 0), self._sub)
