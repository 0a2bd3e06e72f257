"""hooktui: a terminal debugger that pauses inside every PyTorch hook firing.

`hooktui.record(model, inputs)` traces one forward and backward; `hooktui.Session` is the
pausing version. Both are imported on first use (they need torch).
"""

__version__ = "0.1.0"
__all__ = ["Event", "Session", "Trace", "record", "__version__"]


def __getattr__(name: str):
    if name in ("Event", "Session", "Trace", "record"):
        from . import engine

        return getattr(engine, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
