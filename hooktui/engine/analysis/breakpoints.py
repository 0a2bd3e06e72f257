"""Breakpoints: where a run stops, and the words that say why.

A breakpoint is a frozen value (it can be a dict key and a set member) of one of five
kinds. All but `condition` are decided from a firing's record alone, so the same
breakpoint stops a live run (engine/run/gate.py) and a walk through a recorded history
(`c` after `N`, `hooktui view`) at the same firings:

- `module`: the firing's module matches a glob (optionally one phase / hook kind);
- `user_hook`: one of the model's own hooks ran;
- `nonfinite`: a tensor of the firing holds NaN, or +/-Inf (unless `inf=False`) in a tensor
  that carries or produces a gradient, from the exact counts every record carries
  (TensorRecord.nonfinite_counts). A module's input that needs no grad may hold +/-Inf by
  design: the additive -inf attention mask of every causal transformer (`is_gradless_input`).
  With `born_only`, only where such a value is born, not where it is carried on
  (engine/analysis/births.py: the list follows the run's firings for it);
- `threshold`: a tensor's finite abs-max or norm is above `bound`;
- `condition`: a Python expression, evaluated at every firing against the live objects
  (names in CONDITION_NAMES). An expression that raises stops there, the error as reason.

`BreakpointList` holds them with a hit count and an enabled flag each. It is shared by
the worker (which checks) and the UI (which toggles): a lock guards it.
"""

from __future__ import annotations

import fnmatch
import math
import threading
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from ..records import firing
from ..records.records import Event, TensorRecord
from .births import Births

KINDS = ("module", "user_hook", "nonfinite", "threshold", "condition")
STATS = ("norm", "absmax")
CONDITION_NAMES = ("module", "event", "args", "kwargs", "output", "grad_output", "grad_input", "node", "tensors", "torch")


@dataclass(frozen=True)
class Breakpoint:
    kind: str = "module"
    module: str = "*"  # glob over qualified module names; "" is the root
    phase: str | None = None  # "forward", "backward" or None for both
    hook: str | None = None  # one hook kind ("backward", "param_grad", ...) or None for all
    user_hook: int | None = None  # user_hook: UserHookInfo.id
    tensor: str = "*"  # nonfinite / threshold: glob over tensor names ("grad_input*")
    stat: str = "norm"  # threshold: "norm" or "absmax" (over the finite values)
    bound: float = math.inf  # threshold: stop when the stat is above this
    inf: bool = True  # nonfinite: +/-Inf count too (False: NaN only)
    born_only: bool = False  # nonfinite: only where the value is born (engine/analysis/births.py)
    expression: str = ""  # condition

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown breakpoint kind {self.kind!r}")
        if self.kind == "user_hook" and self.user_hook is None:
            raise ValueError("a user_hook breakpoint needs the hook's id")
        if self.kind == "threshold" and (self.stat not in STATS or not math.isfinite(self.bound)):
            raise ValueError(f"a threshold needs a stat in {STATS} and a finite bound")
        if self.born_only and self.kind != "nonfinite":
            raise ValueError("only a non-finite breakpoint can stop where a value is born")
        if self.kind == "condition":
            _compiled(self.expression)  # a syntax error is the user's to see now, not at a firing

    # -- constructors in the user's words ----------------------------------------------
    @classmethod
    def on_module(cls, module: str = "*", phase: str | None = None, hook: str | None = None) -> Breakpoint:
        return cls("module", module=module, phase=phase, hook=hook)

    @classmethod
    def on_user_hook(cls, hook_id: int) -> Breakpoint:
        return cls("user_hook", user_hook=hook_id)

    @classmethod
    def nonfinite(cls, module: str = "*", phase: str | None = None, tensor: str = "*", inf: bool = True,
                  born_only: bool = False) -> Breakpoint:
        return cls("nonfinite", module=module, phase=phase, tensor=tensor, inf=inf, born_only=born_only)

    @classmethod
    def threshold(cls, bound: float, stat: str = "norm", module: str = "*", phase: str | None = None, tensor: str = "*") -> Breakpoint:
        return cls("threshold", module=module, phase=phase, tensor=tensor, stat=stat, bound=float(bound))

    @classmethod
    def condition(cls, expression: str, module: str = "*", phase: str | None = None) -> Breakpoint:
        return cls("condition", module=module, phase=phase, expression=expression.strip())

    # -- what it says ----------------------------------------------------------------
    @property
    def label(self) -> str:
        where = _where(self)
        if self.kind == "module":
            return f"module {self.module or '(root)'}" + (f" ({where})" if where else "")
        if self.kind == "user_hook":
            return f"your hook #{self.user_hook}"
        if self.kind == "nonfinite":
            what = "NaN/Inf" if self.inf else "NaN"
            if self.born_only:
                return f"newly born {what}" + (f" ({where})" if where else "")
            return f"{what} in any tensor" + (f" ({where})" if where else "")
        if self.kind == "threshold":
            return f"{self.stat} > {self.bound:g}" + (f" ({where})" if where else "")
        return f"if {self.expression}" + (f" ({where})" if where else "")

    @property
    def needs_live(self) -> bool:
        """Decided only with the live objects (not from a record alone)."""
        return self.kind == "condition"

    # -- deciding ----------------------------------------------------------------------
    def check(self, event: Event, live: Any = None, born: list | None = None) -> str | None:
        """Why this breakpoint stops at `event` (plain words), or None. `live` is the
        engine's LiveFiring when there is one. A condition that raises returns its error.
        `born`: for a `born_only` breakpoint, the bad tensors born at `event` (Births.observe);
        without it, such a breakpoint stops at any bad firing, as a plain one does."""
        if self.kind == "user_hook":
            if event.user_hook is not None and event.user_hook.hook.id == self.user_hook:
                return self.label
            return None
        if event.hook == "error" or event.user_hook is not None:
            return None
        if self.kind in ("nonfinite", "threshold") and not firing.can_stop_at(event.hook):
            return None  # a legacy firing: its gradients reach a shown firing (firing.py)
        if self.phase is not None and event.phase != self.phase:
            return None
        if self.hook is not None and event.hook != self.hook:
            return None
        if not fnmatch.fnmatchcase(event.module, self.module):
            return None
        if self.kind == "module":
            return self.label
        if self.born_only and born is not None:
            return next((f"{words} in {tensor.name}, born here" for tensor, words in born), None)
        if self.kind in ("nonfinite", "threshold"):
            for tensor in event.tensors:
                words = self.tensor_reason(tensor, event.phase)
                if words is not None:
                    return f"{words} in {tensor.name}"
            return None
        return _evaluate(self.expression, event, live)

    def tensor_reason(self, tensor: TensorRecord, phase: str | None = None) -> str | None:
        """A value breakpoint's words for what is wrong with one tensor of a firing of
        `phase`, or None."""
        if tensor.is_missing or not tensor_matches(tensor, self.tensor):
            return None
        if self.kind == "nonfinite":
            counts = tensor.nonfinite_counts
            if counts is None:
                return None
            return nonfinite_words(counts, self.inf and not is_gradless_input(tensor, phase)) or None
        if self.kind == "threshold":
            stats = tensor.stats
            value = None if stats is None else getattr(stats, self.stat)
            return f"{self.stat} {value:.4g} > {self.bound:g}" if value is not None and value > self.bound else None
        return None


def _where(bp: Breakpoint) -> str:
    parts = []
    if bp.kind != "module" and bp.module != "*":
        parts.append(f"modules {bp.module or '(root)'}")
    if bp.phase:
        parts.append(bp.phase)
    if bp.hook:
        parts.append(f"{bp.hook} firings")
    if bp.tensor != "*":
        parts.append(f"tensors {bp.tensor}")
    return ", ".join(parts)


def is_gradless_input(tensor: TensorRecord, phase: str | None) -> bool:
    """A forward input that needs no grad (an additive attention mask): its +/-Inf is not a
    bug, since no gradient flows through it; a NaN in it still is. A record that does not say
    (`requires_grad` None: an older trace file) counts as carrying a gradient."""
    return phase == "forward" and tensor.requires_grad is False and tensor.name.startswith(("args", "kwargs"))


def tensor_matches(tensor: TensorRecord, pattern: str) -> bool:
    return pattern == "*" or fnmatch.fnmatchcase(tensor.name, pattern)


def nonfinite_words(counts: tuple[int, int, int], inf: bool = True) -> str:
    nan, posinf, neginf = counts
    parts = [f"{nan} NaN"] if nan else []
    if inf and posinf:
        parts.append(f"{posinf} +Inf")
    if inf and neginf:
        parts.append(f"{neginf} -Inf")
    return ", ".join(parts)


# -- conditions --------------------------------------------------------------------------
@lru_cache(maxsize=256)
def _compiled(expression: str):
    if not expression:
        raise ValueError("an empty condition")
    try:
        return compile(expression, "<condition>", "eval")
    except SyntaxError as exc:
        raise ValueError(f"condition {expression!r} is not a Python expression: {exc.msg}") from None


def condition_scope(event: Event, live: Any) -> dict[str, Any]:
    """The names a condition (or the console) sees. Without live objects (a recorded
    trace) only `event` and `tensors` (the records, by name) exist."""
    if live is None:
        return {"event": event, "tensors": {t.name: t for t in event.tensors}}
    import torch

    scope: dict[str, Any] = dict.fromkeys(CONDITION_NAMES)
    scope.update(event=event, module=live.module, node=live.node, tensors=dict(live.tensors), torch=torch)
    scope.update(live.scope or {})
    return scope


def _evaluate(expression: str, event: Event, live: Any) -> str | None:
    try:
        result = eval(_compiled(expression), {"__builtins__": __builtins__}, condition_scope(event, live))
        hit = bool(result)
    except Exception as exc:  # the user's expression: stop and say what it raised
        return f"the condition {expression!r} raised {type(exc).__name__}: {exc}"
    return f"the condition {expression!r} is true" if hit else None


# -- the list --------------------------------------------------------------------------
@dataclass(frozen=True)
class BreakpointState:
    breakpoint: Breakpoint
    enabled: bool = True
    hits: int = 0


@dataclass(frozen=True)
class Stop:
    """Why a run stopped at a firing: the breakpoint and the words for what it saw."""

    index: int
    breakpoint: Breakpoint
    reason: str
    sub: int = 0  # the firing's sub-number (Event.sub)

    @property
    def key(self) -> tuple[int, int]:
        """The stopped firing's Event.key."""
        return (self.index, self.sub)


class BreakpointList:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._states: dict[Breakpoint, BreakpointState] = {}
        # Where conditions matched at live firings (Event.key -> stop): walking the
        # history again cannot evaluate them without the live objects.
        self.live_hits: dict[tuple[int, int], Stop] = {}
        # What each `born_only` breakpoint knows of the run so far (engine/analysis/births.py).
        self._births: dict[Breakpoint, Births] = {}
        # The firings (Event.key) each breakpoint has counted: a hit is a firing it matched,
        # counted once however often a run or a walk through the history comes past it.
        self._counted: dict[Breakpoint, set[tuple[int, int]]] = {}

    def __len__(self) -> int:
        return len(self._states)

    def add(self, bp: Breakpoint) -> None:
        with self._lock:
            self._states.setdefault(bp, BreakpointState(bp))

    def replayed_births(self, events) -> dict[Breakpoint, Births]:
        """What the enabled `born_only` breakpoints would know after `events` (a history up
        to where a walk through it starts)."""
        births = {s.breakpoint: Births(s.breakpoint.tensor_reason) for s in self.states() if s.enabled and s.breakpoint.born_only}
        for event in events if births else ():
            for tracker in births.values():
                tracker.observe(event)
        return births

    def remove(self, bp: Breakpoint) -> None:
        with self._lock:
            self._states.pop(bp, None)
            self._counted.pop(bp, None)

    def toggle(self, bp: Breakpoint) -> bool:
        """Add or remove `bp`; True when it is now set."""
        with self._lock:
            if bp in self._states:
                del self._states[bp]
                self._counted.pop(bp, None)
                return False
            self._states[bp] = BreakpointState(bp)
            return True

    def set_enabled(self, bp: Breakpoint, enabled: bool) -> None:
        with self._lock:
            if bp in self._states:
                self._states[bp] = replace(self._states[bp], enabled=enabled)

    def replace_states(self, states: list[BreakpointState]) -> None:
        """Hold exactly these (another process's list: hooktui attach), hits and all."""
        with self._lock:
            self._states = {state.breakpoint: state for state in states}
            self._counted = {bp: seen for bp, seen in self._counted.items() if bp in self._states}

    def states(self) -> list[BreakpointState]:
        with self._lock:
            return list(self._states.values())

    @property
    def enabled(self) -> frozenset[Breakpoint]:
        return frozenset(s.breakpoint for s in self.states() if s.enabled)

    def has_kind(self, *kinds: str) -> bool:
        if not self._states:  # asked at every firing: most runs have no breakpoint
            return False
        return any(s.enabled and s.breakpoint.kind in kinds for s in self.states())

    def check(self, event: Event, live: Any = None, count: bool = True, records_only: bool = False,
              births: dict[Breakpoint, Births] | None = None) -> Stop | None:
        """The first enabled breakpoint that stops at `event`; with `count`, every one
        that matches gets a hit. `records_only`: skip those that need the live objects.
        `births`: where the `born_only` ones follow the firings (`replayed_births` for a
        walk through a history); the run's own by default. Call it for firings in order."""
        first = None
        births = self._births if births is None else births
        for state in self.states():
            if not state.enabled or (records_only and state.breakpoint.needs_live):
                continue
            born = None
            if state.breakpoint.born_only:
                born = births.setdefault(state.breakpoint, Births(state.breakpoint.tensor_reason)).observe(event)
            reason = state.breakpoint.check(event, live, born)
            if reason is None:
                continue
            if count:
                with self._lock:
                    current = self._states.get(state.breakpoint)
                    counted = self._counted.setdefault(state.breakpoint, set())
                    if current is not None and event.key not in counted:
                        counted.add(event.key)
                        self._states[state.breakpoint] = replace(current, hits=current.hits + 1)
            stop = Stop(event.index, state.breakpoint, reason, event.sub)
            if live is not None and state.breakpoint.needs_live:
                self.live_hits.setdefault(event.key, stop)
            if first is None:
                first = stop
        return first


# -- typed in (the app's Breakpoints screen) ------------------------------------------------
SPEC_HELP = ("nan | nonfinite [nan-only] [born] | norm > BOUND | absmax > BOUND | module GLOB | if EXPRESSION; "
             "then optionally: in GLOB, forward|backward, tensor GLOB (not after if)")


def parse_breakpoint(spec: str) -> Breakpoint:
    """A breakpoint from a short spec, e.g. `norm > 1e3 in layers.* backward tensor grad_input*`,
    `nan`, `if output.abs().max() > 10`. ValueError says what was wrong."""
    text = spec.strip()
    if text.startswith("if "):
        return Breakpoint.condition(text[3:])
    words = text.split()
    if not words:
        raise ValueError(f"an empty breakpoint: {SPEC_HELP}")
    where: dict[str, Any] = {"module": "*", "phase": None}
    tensor = "*"
    head, rest = _split_head(words)
    i = 0
    while i < len(rest):
        word = rest[i]
        if word in ("forward", "backward"):
            where["phase"] = word
            i += 1
        elif word in ("in", "tensor") and i + 1 < len(rest):
            if word == "in":
                where["module"] = rest[i + 1]
            else:
                tensor = rest[i + 1]
            i += 2
        else:
            raise ValueError(f"did not understand {word!r}: {SPEC_HELP}")
    kind = head[0]
    if kind in ("nan", "nonfinite", "inf"):
        extra = head[1:]
        born = "born" in extra
        extra = [word for word in extra if word != "born"]
        nan_only = extra == ["nan-only"] or kind == "nan" and extra == ["only"]
        if extra and not nan_only or head[1:].count("born") > 1:
            raise ValueError(f"did not understand {' '.join(head)!r}: {SPEC_HELP}")
        return Breakpoint.nonfinite(tensor=tensor, inf=not nan_only, born_only=born, **where)
    if kind in STATS:
        if len(head) != 3 or head[1] != ">":
            raise ValueError(f"write a bound as `{kind} > NUMBER`: {SPEC_HELP}")
        try:
            bound = float(head[2])
        except ValueError:
            raise ValueError(f"{head[2]!r} is not a number") from None
        if not math.isfinite(bound):
            raise ValueError("the bound must be a finite number")
        return Breakpoint.threshold(bound, stat=kind, tensor=tensor, **where)
    if kind == "module" and len(head) == 2:
        return Breakpoint.on_module(head[1], where["phase"])
    raise ValueError(f"did not understand {spec.strip()!r}: {SPEC_HELP}")


def _split_head(words: list[str]) -> tuple[list[str], list[str]]:
    """The kind's own words, and the qualifiers after them."""
    for i, word in enumerate(words):
        if i and word in ("in", "tensor", "forward", "backward"):
            return words[:i], words[i:]
    return words, []
