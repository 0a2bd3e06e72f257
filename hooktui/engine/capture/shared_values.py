"""One copy of the small immutable values every module call keeps until its backward.

A call keeps its inputs' (shape, dtype, device) and its outputs' from the forward to the
backward, and on a model of many small modules most calls keep the same ones: PyTorch makes
a new `torch.Size` and `torch.device` at each `.shape` / `.device`, so each call held its own
copies (~0.5 KB a call of a Linear; these objects, held from the forward to the backward, are
what sets the run's peak of live Python objects). A `Kept` gives back the one copy of an
equal value made before. Only immutable values go in (tuples of sizes, dtypes, devices,
bools), so sharing one can change nothing a reader sees.

`NOTHING`: the one empty dict of every call that has no entry of some kind (no input needing
grad, no duplicated input, no input hooked before the call): read-only, so a writer builds
its own dict.
"""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")


class _Nothing(dict):
    """An empty dict nothing can be put in (hashable, so that a dataclass takes it as a
    default): read as fast as a dict, and a writer that forgets to build its own dict
    raises instead of filling every call's."""

    __slots__ = ()

    def _refuse(self, *_args, **_kwargs):
        raise TypeError("NOTHING is shared by every call: build a dict of your own")

    __setitem__ = __delitem__ = __ior__ = update = setdefault = pop = popitem = clear = _refuse

    def __hash__(self) -> int:
        return 0


NOTHING: dict = _Nothing()


class Kept:
    """Equal values -> their first copy, for one kind of value (each kind its own, so that
    no value is ever given back for an equal one of another type: a plain tuple for a
    NamedTuple). Cleared when it grows past `bound` (a run of ever new shapes): a value
    made again after that is simply a new copy."""

    __slots__ = ("_values", "_bound")

    def __init__(self, bound: int = 4096) -> None:
        self._values: dict[Any, Any] = {}
        self._bound = bound

    def __call__(self, value: T) -> T:
        """The copy of `value` kept already, or `value` itself, kept from now on. A value
        that cannot be hashed or compared (a tensor subclass's odd shape) is returned as it is."""
        values = self._values
        try:
            kept = values.get(value)
            if kept is not None:
                return kept
            if len(values) >= self._bound:
                values.clear()
            values[value] = value
        except Exception:
            return value
        return value
