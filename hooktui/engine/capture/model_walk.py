"""One walk of the model's modules, parameters and buffers, shared by everything that sets
up a run: the setup needed them over a dozen times, and each walk of a 129-module model
costs 0.2-0.4 ms (a few percent of a small model's step).

Names are the user's: without the prefixes of wrappers (wrappers.py); `raw` keeps the
names PyTorch gives, where they differ.

`walk_of(model)` keeps a model's walk from one run to the next (`record()` in a loop on
the same model walked it, named it and described it at every call: ~2 ms of a 64-layer
MLP's step). What a walk depends on is each module's class and the entries of its
`_modules`, `_parameters` and `_buffers` dicts (and the parameters' shapes, which the
trace header shows); before a kept walk is used again those are read off the model and
compared, by identity, with what they were (`_Kept.current`: ~0.3 ms for 129 modules on a
loaded machine, where the walk and the descriptions took ~1.7 ms).
Anything changed (a module added, removed or replaced, a parameter or buffer replaced, a
module's class swapped, a parameter resized through `.data`): walked afresh. Hooks are
not part of it: the user's hooks are found again at every run (user_hooks.py).

The kept walk holds the model only weakly (a submodule or a hook closure that points back
at the root would otherwise keep the whole model alive from this cache), and compares
objects it keeps alive while it compares: an id of a dead object can be reused.
"""

from __future__ import annotations

import weakref
from itertools import chain, repeat
from operator import attrgetter, is_, itemgetter, methodcaller
from typing import Any

from torch import nn
from torch.nn.parameter import is_lazy

from .wrappers import user_names


class ModelWalk:
    __slots__ = ("modules", "params", "buffers", "raw", "_derived")

    def __init__(self, model: nn.Module) -> None:
        named = list(model.named_modules())
        shown = user_names(named)
        self.modules: list[tuple[str, nn.Module]] = [(shown[raw], m) for raw, m in named]
        # Shown name -> raw name, for the modules whose names differ.
        self.raw: dict[str, str] = {shown[raw]: raw for raw, _ in named if shown[raw] != raw}
        self._derived: dict[str, Any] = {}
        if not self.raw:  # the common case: PyTorch's own walk, same order, same names
            self.params = list(model.named_parameters())
            self.buffers = list(model.named_buffers())
            return
        # As named_parameters() walks them (each tensor once, at its first owner), named
        # after their owner's shown name.
        self.params = _members(self.modules, "_parameters")
        self.buffers = _members(self.modules, "_buffers")

    @property
    def has_lazy(self) -> bool:
        """A lazy module's parameters or buffers exist only after its first forward."""
        return any(is_lazy(t) for _, t in self.params) or any(is_lazy(t) for _, t in self.buffers)

    def derived(self, key: str, make):
        """`make(walk)`, made once per walk and kept with it. A kept walk shares these with
        every run that reuses it: they hold names and ids only (an object held here would
        keep the model alive), and their users read them, never change them."""
        try:
            return self._derived[key]
        except KeyError:
            value = self._derived[key] = make(self)
            return value

    @property
    def facts(self) -> dict[int, tuple[str, str]]:
        """id(module) -> (name, type name): what every firing of a module repeats."""
        return self.derived("facts", lambda w: {id(m): (name, type(m).__name__) for name, m in w.modules})

    @property
    def param_names(self) -> dict[int, str]:
        """id(parameter) -> its name."""
        return self.derived("param_names", lambda w: {id(p): name for name, p in w.params})


def _members(modules: list[tuple[str, nn.Module]], attr: str) -> list:
    seen: set[int] = set()
    out = []
    for owner, module in modules:
        for leaf, tensor in getattr(module, attr).items():
            if tensor is None or id(tensor) in seen:
                continue
            seen.add(id(tensor))
            out.append((f"{owner}.{leaf}" if owner else leaf, tensor))
    return out


# -- kept from one run to the next ----------------------------------------------------
_TABLES = ("_modules", "_parameters", "_buffers")

_kept: weakref.WeakKeyDictionary[nn.Module, _Kept] = weakref.WeakKeyDictionary()


def walk_of(model: nn.Module) -> ModelWalk:
    """The walk of `model`: the one kept from an earlier run if nothing it depends on has
    changed since, else a new one (kept in turn)."""
    try:
        kept = _kept.get(model)
    except TypeError:  # a module that cannot be weakly referenced or hashed: walked every time
        return ModelWalk(model)
    if kept is not None:
        walk = kept.current(model)
        if walk is not None:
            return walk
    walk = ModelWalk(model)
    entry = _Kept.of(walk)
    if entry is None:
        _kept.pop(model, None)
    else:
        _kept[model] = entry
    return walk


def forget_walks() -> None:
    """Drop every kept walk (tests; nothing else needs to)."""
    _kept.clear()


class _Kept:
    """A walk without strong references to the model: the modules', parameters' and
    buffers' weak references, and what the walk read of each module, as flat lists that
    C-level passes read and compare again (no Python step per module)."""

    __slots__ = ("walk", "refs", "n_modules", "n_params", "types", "sizes", "keys", "slots", "shapes")

    @classmethod
    def of(cls, walk: ModelWalk) -> _Kept | None:
        """None for a walk that cannot be kept: lazy tensors (shapes to come), a module
        whose tables are not plain dicts (TorchScript), objects without weak references."""
        modules = [m for _, m in walk.modules]
        params = [p for _, p in walk.params]
        buffers = [b for _, b in walk.buffers]
        if walk.has_lazy:
            return None
        try:
            kept = cls()
            kept.refs = [weakref.ref(o) for o in (*modules[1:], *params, *buffers)]  # the root is the dict's key
            kept.types, kept.sizes, kept.keys, values = _read(modules)
        except (TypeError, KeyError):
            return None
        # Each table entry as the index of its object among the walk's (None last).
        objects = [*modules, *params, *buffers, None]
        where = {id(o): i for i, o in enumerate(objects)}
        slots = [where.get(id(v)) for v in values]
        if None in slots:  # something the walk did not take in (cannot happen in PyTorch's walk)
            return None
        kept.slots = slots
        kept.n_modules, kept.n_params = len(modules), len(params)
        kept.shapes = list(map(_SHAPE, params))
        # The walk itself, less its objects: its names, its raw names, and what was derived
        # from it that holds ids and names only (valid as long as the objects are the same).
        blank = ModelWalk.__new__(ModelWalk)
        blank.modules = [name for name, _ in walk.modules]
        blank.params = [name for name, _ in walk.params]
        blank.buffers = [name for name, _ in walk.buffers]
        blank.raw = walk.raw
        blank._derived = walk._derived  # filled by the run that made it, shared from now on
        kept.walk = blank
        return kept

    def current(self, model: nn.Module) -> ModelWalk | None:
        """The kept walk with today's objects, if nothing it depends on changed; else None."""
        objects = [model, *map(_CALL, self.refs)]
        if any(map(is_, objects, repeat(None))):  # a reference died (`None in` would use tensors' ==)
            return None
        end_modules = self.n_modules
        end_params = end_modules + self.n_params
        modules = objects[:end_modules]
        params = objects[end_modules:end_params]
        try:
            types, sizes, keys, values = _read(modules)
        except (TypeError, KeyError):  # a table replaced by something else, or gone
            return None
        objects.append(None)
        # Every object compared is alive (held in `objects`), so `is` can be trusted.
        if (types != self.types or sizes != self.sizes or keys != self.keys
                or not all(map(is_, values, map(objects.__getitem__, self.slots)))
                or list(map(_SHAPE, params)) != self.shapes):
            return None
        blank = self.walk
        walk = ModelWalk.__new__(ModelWalk)
        walk.modules = list(zip(blank.modules, modules))
        walk.params = list(zip(blank.params, params))
        walk.buffers = list(zip(blank.buffers, objects[end_params:-1]))
        walk.raw = blank.raw
        walk._derived = blank._derived
        return walk


_STATE = attrgetter("__dict__")
_TABLES_OF = itemgetter(*_TABLES)
_SHAPE = attrgetter("shape")
_CALL = methodcaller("__call__")


def _read(modules: list[nn.Module]) -> tuple[list, list, list, list]:
    """What a walk reads of each module: its class, and the size, the keys and the objects
    of each of its three tables (C-level passes: no Python step per module)."""
    tables = list(chain.from_iterable(map(_TABLES_OF, map(_STATE, modules))))
    return (list(map(type, modules)), list(map(len, tables)), list(chain.from_iterable(tables)),
            list(chain.from_iterable(map(dict.values, tables))))
