"""Hooks that FSDP and tensor parallel register on the model's modules: labelled as what they
do, not as "your hook", and not compared value by value (user_hooks.py): FSDP2's forward
hooks gather and free parameters, TP's turn plain tensors into DTensors and back, which a
comparison of what they got with what they returned would report as changes of the user's.

Recognised by where the function is defined (torch/distributed/fsdp, torch/distributed/tensor).
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable

# FSDP2's FSDPState methods registered as module hooks (torch 2.13).
_FSDP = {
    "_pre_forward": "FSDP2 all-gathers this module's parameters before its forward (unshard)",
    "_post_forward": "FSDP2 frees the gathered parameters after the forward (reshard) and hooks the outputs for backward",
    "_pre_backward": "FSDP2 all-gathers this module's parameters again before its backward",
    "_post_backward": "FSDP2 reduce-scatters the gradients and frees the gathered parameters",
}


def library_label(hook: Callable, kind: str) -> str | None:
    """What `hook` does, if FSDP or tensor parallel registered it; None for any other."""
    fn = inspect.unwrap(hook)
    func = getattr(fn, "__func__", fn)
    code = getattr(func, "__code__", None)
    if code is None:
        return None
    path = code.co_filename.replace(os.sep, "/")
    if "/torch/distributed/fsdp/" in path:
        return _FSDP.get(func.__name__, f"FSDP's {func.__name__}")
    if "/torch/distributed/tensor/" in path:
        return _tensor_parallel(fn, kind)
    return None


def _tensor_parallel(fn: Callable, kind: str) -> str:
    """distribute_module's lambdas call a ParallelStyle's partial(_prepare_input_fn or
    _prepare_output_fn, from-layouts, to-layouts, ...), held in their closure."""
    what = "inputs" if kind.endswith("forward_pre") else "output"
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if isinstance(value, functools.partial):
            style = getattr(value.func, "__qualname__", "").partition(".")[0] or "a ParallelStyle"
            layouts = [_layout(a) for a in value.args[:2] if not isinstance(a, bool)]
            if len(layouts) == 2:
                return f"tensor parallel ({style}) redistributes the {what} from {layouts[0]} to {layouts[1]}"
            if len(layouts) == 1:
                return f"tensor parallel ({style}) redistributes the {what} to {layouts[0]}"
            return f"tensor parallel ({style}) prepares the {what}"
    return f"tensor parallel prepares the {what}"


def _layout(value) -> str:
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(_layout(v) for v in value) + ")"
    return "as given" if value is None else str(value)
