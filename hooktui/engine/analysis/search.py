"""The app's `/` search: which firings a query matches, decided from a firing's record alone.

A query is words, all of which a firing must match (case does not matter):

- a plain word: the module's qualified name contains it, or matches it as a glob
  (`layers.*.attn`; the root module is `(root)`), as `module:WORD` says too;
- `kind:KIND` (or `hook:`): the hook kind, by its name or the name the timeline shows it
  by (`backward_pre`, `legacy_bwd`, a glob such as `backward*`);
- `phase:forward` / `phase:backward` (or `fwd` / `bwd`);
- `tensor:NAME`: the firing has a tensor (not None) whose name contains NAME or matches
  it as a glob (`grad_output`, `grad_input[0]`, `output*`);
- `nan`, `inf`, `nonfinite`: a tensor of the firing holds NaN, +/-Inf, or either (the
  exact counts every record carries: the firings the timeline's `!` column flags).

The same `Search` decides in the app (its history) and on the model's thread, where a
live run goes on until the next match (engine/run/gate.py `run_until`), so both agree. On
the app's history, packed while the run goes on (records/held.py), `positions` asks its
parts of the store's columns instead, each once per distinct value, and `matches` only of
the firings the columns cannot tell: the same answer, no chunk unpacked.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ..records.firing import HOOK_KINDS
from ..records.held import INF, NAN, nonfinite_flags
from ..records.records import Event

VALUE_WORDS = ("nan", "inf", "nonfinite")
# The hook kinds as the timeline's hook column shows them, where that differs.
KIND_ALIASES = {"legacy_bwd": "legacy_backward"}
PHASES = {"forward": "forward", "fwd": "forward", "backward": "backward", "bwd": "backward"}
SEARCH_HELP = "words: module name, kind:KIND, phase:fwd|bwd, tensor:NAME, nan, inf, nonfinite"


@dataclass(frozen=True)
class Search:
    text: str
    modules: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    phases: tuple[str, ...] = ()
    tensors: tuple[str, ...] = ()
    values: tuple[str, ...] = ()  # among VALUE_WORDS

    def matches(self, event: Event) -> bool:
        if any(event.phase != phase for phase in self.phases):
            return False
        if any(not fnmatch.fnmatchcase(event.hook, kind) for kind in self.kinds):
            return False
        name = (event.module or "(root)").lower()
        if any(not _name_matches(name, pattern) for pattern in self.modules):
            return False
        if self.tensors:
            names = [t.name.lower() for t in event.tensors if not t.is_missing]
            if any(not any(_name_matches(n, pattern) for n in names) for pattern in self.tensors):
                return False
        return all(_has_values(event, word) for word in self.values)

    def positions(self, events: Sequence[Event], start: int = 0, end: int | None = None,
                  hidden: Collection[str] = ()) -> list[int]:
        """Positions from `start` to `end` of the firings of `events` that match, those of a
        kind in `hidden` left out: `[at for at in range(start, end) if events[at].hook not in
        hidden and self.matches(events[at])]`. A packed store (records/held.py) decides from
        its columns without decoding a chunk: kind, phase and module name tested once per
        distinct value, the `tensor:` words against each distinct set of tensor names, the
        NaN / Inf words against a byte of flags a firing."""
        end = len(events) if end is None else end
        where = getattr(events, "positions_matching", None)
        if where is None:
            return [at for at in range(start, end) if events[at].hook not in hidden and self.matches(events[at])]
        return where(
            start, end,
            hook=lambda hook: hook not in hidden and all(fnmatch.fnmatchcase(hook, kind) for kind in self.kinds),
            phase=lambda phase: all(phase == want for want in self.phases),
            module=lambda module: _module_matches((module or "(root)").lower(), self.modules),
            names=self._names_match if self.tensors else None,
            nonfinite=self._flags_match if self.values else None,
            record=lambda event: event.hook not in hidden and self.matches(event),
        )

    def _names_match(self, names: tuple[str, ...]) -> bool:
        """The `tensor:` words, of the names of a firing's tensors that are not missing."""
        lowered = [name.lower() for name in names]
        return all(any(_name_matches(name, pattern) for name in lowered) for pattern in self.tensors)

    def _flags_match(self, flags: int) -> bool:
        """The `nan` / `inf` / `nonfinite` words, of a firing's held.nonfinite_flags."""
        return all(flags & _FLAGS[word] for word in self.values)


_FLAGS = {"nan": NAN, "inf": INF, "nonfinite": NAN | INF}


def _module_matches(name: str, patterns: tuple[str, ...]) -> bool:
    return all(_name_matches(name, pattern) for pattern in patterns)


def _name_matches(name: str, pattern: str) -> bool:
    """Contains `pattern`, or matches it as a glob (`grad_input[0]` is both: a plain name
    with brackets is found as it is written)."""
    return pattern in name or (any(c in pattern for c in "*?[") and fnmatch.fnmatchcase(name, pattern))


def _has_values(event: Event, word: str) -> bool:
    """The `nan` / `inf` / `nonfinite` word, of the firing's exact counts: the rule the packed
    history's flags column keeps (records/held.py `nonfinite_flags`), so both agree."""
    return bool(nonfinite_flags(event) & _FLAGS[word])


def parse_search(text: str) -> Search:
    """The Search a query says; ValueError (one line) for a word it cannot read."""
    terms: dict[str, list[str]] = {"module": [], "kind": [], "phase": [], "tensor": [], "values": []}
    words = text.lower().split()
    if not words:
        raise ValueError(f"an empty search: {SEARCH_HELP}")
    for word in words:
        if word in VALUE_WORDS:
            terms["values"].append(word)
            continue
        key, colon, value = word.partition(":")
        if not colon:
            terms["module"].append(word)
            continue
        key = {"hook": "kind"}.get(key, key)
        if key not in ("module", "kind", "phase", "tensor"):
            raise ValueError(f"unknown term {key + ':'!r}: {SEARCH_HELP}")
        if not value:
            raise ValueError(f"{key}: needs a value, e.g. {_EXAMPLES[key]}")
        if key == "kind":
            value = KIND_ALIASES.get(value, value)
            if not any(fnmatch.fnmatchcase(kind, value) for kind in HOOK_KINDS):
                raise ValueError(f"no hook kind {value!r}: {', '.join(HOOK_KINDS)}")
        if key == "phase":
            if value not in PHASES:
                raise ValueError(f"phase:{value}? forward (fwd) or backward (bwd)")
            value = PHASES[value]
        terms[key].append(value)
    return Search(
        text=" ".join(text.split()),
        modules=tuple(terms["module"]),
        kinds=tuple(terms["kind"]),
        phases=tuple(terms["phase"]),
        tensors=tuple(terms["tensor"]),
        values=tuple(terms["values"]),
    )


_EXAMPLES = {"module": "module:fc1", "kind": "kind:backward_pre", "phase": "phase:bwd", "tensor": "tensor:grad_output"}
