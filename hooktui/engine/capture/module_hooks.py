"""The tracer's three forward hooks on one module, put in and taken out without a
`RemovableHandle` each.

`record()` installs and removes them at every call: on a model of many small modules
the handles (a weak reference per hook dict, three dicts for a forward hook) were most
of what installing cost. Here the hooks go into the very dicts, under the very ids,
that `register_forward_pre_hook` / `register_forward_hook` would use (ids taken from
`RemovableHandle.next_id`, so they never collide with anyone else's), and come out of
them again. A module class that overrides either registration method gets the public
calls instead: whatever it does there is done.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter

from torch import nn
from torch.utils.hooks import RemovableHandle

_PRE = nn.Module.register_forward_pre_hook
_POST = nn.Module.register_forward_hook

_DICTS = ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks",
          "_forward_hooks_with_kwargs", "_forward_hooks_always_called")

_DICTS_OF = itemgetter(*_DICTS)

# (dict, offset from the pre-hook's id) of each entry `ForwardHooks.add` makes.
_KEYS = (("_forward_pre_hooks", 0), ("_forward_pre_hooks_with_kwargs", 0), ("_forward_hooks", 1),
         ("_forward_hooks_with_kwargs", 1), ("_forward_hooks", 2), ("_forward_hooks_with_kwargs", 2),
         ("_forward_hooks_always_called", 2))


class ForwardHooks:
    """Forward pre, forward and always-called forward hooks (all with kwargs) on modules."""

    __slots__ = ("_placed", "_handles")

    def __init__(self) -> None:
        self._placed: list[tuple[nn.Module, int]] = []  # (module, id of its pre-hook; +1, +2 the others)
        self._handles: list[tuple[nn.Module, tuple[RemovableHandle, ...]]] = []  # modules that register their own way

    def add(self, module: nn.Module, pre: Callable, post: Callable, raised: Callable) -> None:
        """`pre` a forward pre-hook, `post` a forward hook, `raised` a forward hook that is
        always called (also when forward raises), all with kwargs, last in their dicts, as
        the public calls in that order place them."""
        kind = type(module)
        own = kind.register_forward_pre_hook is not _PRE or kind.register_forward_hook is not _POST
        try:
            pre_hooks, pre_kwargs, hooks, with_kwargs, always = _DICTS_OF(module.__dict__)
        except KeyError:  # a hook dict missing: PyTorch's calls make it
            own = True
        if own or None in (pre_hooks, pre_kwargs, hooks, with_kwargs, always):
            self._handles.append((module, (module.register_forward_pre_hook(pre, with_kwargs=True),
                                           module.register_forward_hook(post, with_kwargs=True),
                                           module.register_forward_hook(raised, with_kwargs=True, always_call=True))))
            return
        first = RemovableHandle.next_id
        RemovableHandle.next_id = first + 3
        pre_hooks[first] = pre
        pre_kwargs[first] = True
        hooks[first + 1] = post
        with_kwargs[first + 1] = True
        hooks[first + 2] = raised
        with_kwargs[first + 2] = True
        always[first + 2] = True
        self._placed.append((module, first))

    def remove(self) -> None:
        """Take every hook out; a hook dict left empty gives its memory back (`release`)."""
        for module, first in self._placed:
            try:
                pre_hooks, pre_kwargs, hooks, with_kwargs, always = _DICTS_OF(module.__dict__)
            except KeyError:  # a dict the model dropped meanwhile
                pre_hooks = None
            if pre_hooks is None or None in (pre_kwargs, hooks, with_kwargs, always):
                state = module.__dict__
                for name, offset in _KEYS:
                    table = state.get(name)  # a dict the model replaced meanwhile: nothing of ours
                    if table is not None:
                        table.pop(first + offset, None)
                release(module)
                continue
            # Unrolled: five dicts, seven entries, per module of every run; a dict left
            # empty gives its memory back (`release`).
            pre_hooks.pop(first, None)
            pre_kwargs.pop(first, None)
            hooks.pop(first + 1, None)
            hooks.pop(first + 2, None)
            with_kwargs.pop(first + 1, None)
            with_kwargs.pop(first + 2, None)
            always.pop(first + 2, None)
            for table in (pre_hooks, pre_kwargs, hooks, with_kwargs, always):
                if not table:
                    table.clear()
        self._placed.clear()
        for module, handles in self._handles:
            for handle in handles:
                handle.remove()
            release(module)
        self._handles.clear()


def release(module: nn.Module) -> None:
    """A dict keeps its grown table when its last entry is removed; clear() frees it
    (~200 bytes a dict, five per module: 0.2 KB per firing of a deep MLP)."""
    state = module.__dict__
    for name in _DICTS:
        hooks = state.get(name)
        if hooks is not None and not hooks:
            hooks.clear()
