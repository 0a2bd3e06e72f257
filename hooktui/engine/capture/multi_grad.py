"""Hooks of `torch.autograd.graph.register_multi_grad_hook`, seen as the user's one function.

PyTorch implements a multi-grad hook with a tensor hook on each tensor: `inner_hook`
(mode "all": each stores its gradient, the last one to run calls the user's function with
all of them) or `wrapped_fn` (mode "any": the first to run calls it, the others return).
Taken as plain tensor hooks they would be wrong twice over: mode "all" would show two
firings of torch's `inner_hook` and never the user's function, mode "any" two firings named
after the user's function, which PyTorch called once.

So those tensor hooks are left alone, and the user's function, which they hold in their
closure (the cell `fn`, shared by every tensor hook of one registration), is what gets
wrapped: one `multi_grad` firing each time PyTorch calls it, with what it received.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import torch.autograd.graph as _graph

_GRAPH_FILE = os.path.normcase(os.path.abspath(_graph.__file__))
_PLUMBING = {"inner_hook": "all", "wrapped_fn": "any"}


def plumbing(hook: Callable) -> tuple[object, str, int | None] | None:
    """(the closure cell holding the user's function, the mode, tensors or None) when `hook`
    is one of register_multi_grad_hook's tensor hooks; None for any other hook."""
    code = getattr(hook, "__code__", None)
    if code is None or code.co_name not in _PLUMBING:
        return None
    if os.path.normcase(os.path.abspath(code.co_filename)) != _GRAPH_FILE:
        return None
    cells = dict(zip(code.co_freevars, hook.__closure__ or ()))
    cell = cells.get("fn")
    if cell is None:
        return None
    count = cells.get("len_tensors")
    try:
        tensors = count.cell_contents if count is not None else None
    except ValueError:  # an empty cell
        tensors = None
    return cell, _PLUMBING[code.co_name], tensors


class CellHooks:
    """A closure cell seen as a one-entry hook dict, so a user hook slot (user_hooks.py) can
    put its wrapper there and the original back, as it does in a module's hook dict."""

    __slots__ = ("cell",)

    def __init__(self, cell) -> None:
        self.cell = cell

    def get(self, _key, default=None):
        try:
            return self.cell.cell_contents
        except ValueError:
            return default

    def __setitem__(self, _key, value) -> None:
        self.cell.cell_contents = value
