"""Names as in the user's model: the prefixes that wrappers put in module and parameter
names (`module.` of DDP and DataParallel, `_fsdp_wrapped_module.` of FSDP1,
`_checkpoint_wrapped_module.` of checkpoint_wrapper, `_orig_mod.` of torch.compile) are
dropped, so that traces of one model under different wrappers align (`hooktui diff`).

A wrapper module is itself called, like the module it wraps: its firings keep a name of
their own, the wrapped module's followed by the wrapper's type in brackets
(`layers.0[FullyShardedDataParallel]`), so that no two modules share a name. The raw
names stay beside them (`ModelWalk.raw`, the trace header's modules).
"""

from __future__ import annotations

import functools

from torch import nn

# Wrapper class (or a base class of it) -> the attribute holding the wrapped module.
# By name: importing torch.distributed's FSDP or torch._dynamo to test isinstance costs
# seconds, and a model that uses them has imported them already.
WRAPPED_BY = {
    "DistributedDataParallel": "module",
    "DataParallel": "module",
    "FullyShardedDataParallel": "_fsdp_wrapped_module",
    "ActivationWrapper": "_checkpoint_wrapped_module",  # checkpoint_wrapper, offload_wrapper
    "OptimizedModule": "_orig_mod",
}


def wrapped_attr(module: nn.Module) -> str | None:
    """The attribute under which `module`, a wrapper, holds the module it wraps; None if
    it is no wrapper."""
    attr = _attr_of(type(module))
    return attr if attr is not None and module._modules.get(attr) is not None else None


@functools.lru_cache(maxsize=1024)
def _attr_of(cls: type) -> str | None:
    """Once per class: every run walks every module."""
    return next((WRAPPED_BY[c.__name__] for c in cls.__mro__ if c.__name__ in WRAPPED_BY), None)


@functools.lru_cache(maxsize=1024)
def class_names(cls: type) -> frozenset[str]:
    """The names of `cls` and of its bases, once per class (every run asks for every module
    whether it is one of the wrappers: DDP, FSDP1, FSDP2's FSDPModule...)."""
    return frozenset(c.__name__ for c in cls.__mro__)


def user_names(named_modules: list[tuple[str, nn.Module]]) -> dict[str, str]:
    """Raw module name -> the name shown (parents listed before their children, as
    `named_modules()` lists them)."""
    shown: dict[str, str] = {}
    # Raw name -> the path its children's names start from: a wrapper's own path without
    # the brackets; with the attribute it wraps under, for a wrapper.
    paths: dict[str, tuple[str, str | None]] = {}
    for raw, module in named_modules:
        parent, _, leaf = raw.rpartition(".")
        if not raw:
            base = ""
        else:
            path, attr = paths[parent]
            base = path if leaf == attr else (f"{path}.{leaf}" if path else leaf)
        attr = wrapped_attr(module)
        paths[raw] = (base, attr)
        shown[raw] = base if attr is None else f"{base}[{type(module).__name__}]"
    return shown
