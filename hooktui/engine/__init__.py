"""The engine: torch hooks, the pause gate and tensor summaries. It never imports Textual;
it hands plain records (records.py) to whoever listens.

Names are imported lazily so that reading records or a trace file (`hooktui view`) does
not pay for importing torch.
"""

from importlib import import_module

_EXPORTS = {
    "Breakpoint": "breakpoints",
    "QuitRequested": "gate",
    "Event": "records",
    "ModuleInfo": "records",
    "NodeRecord": "records",
    "SourceLocation": "records",
    "TensorRecord": "records",
    "TensorStats": "records",
    "TraceInfo": "records",
    "Session": "session",
    "Trace": "session",
    "record": "session",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)
