"""hooktui: a terminal debugger that pauses inside every PyTorch hook firing.

`hooktui.record(model, inputs)` traces one forward and backward; `hooktui.Session` is the
pausing version. `hooktui.debug(model, step)` debugs one step of your own training loop
and `hooktui.guard(model)` stops a loop at the first NaN/Inf; `hooktui.arm(model)` lets
`hooktui attach PID` open a step of a training already running. Imported on first use
(they need torch).
"""

__version__ = "0.1.0"
__all__ = [
    "Event", "GuardError", "HooktuiWarning", "NonFiniteError", "Quit", "Session", "ThresholdError", "Trace", "arm", "debug", "guard", "record", "__version__",
]

_LAZY = {
    "Event": "engine",
    "Session": "engine",
    "Trace": "engine",
    "record": "engine",
    "arm": "loop.arm",
    "debug": "loop.debug",
    "guard": "loop.guard",
    "Quit": "loop.errors",
    "NonFiniteError": "loop.errors",
    "ThresholdError": "loop.errors",
    "GuardError": "loop.errors",
    "HooktuiWarning": "loop.say",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"{__name__}.{module}"), name)
