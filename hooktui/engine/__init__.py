"""The engine: torch hooks, the pause gate and tensor summaries. It never imports Textual;
it hands plain records (records/records.py) to whoever listens.

Its rooms, each importing only the rooms below it (`lint-imports` checks this):

    run        a session, its gate, the loader
    capture    the hooks on a model and the firings they make
    analysis   breakpoints, where a value was born, comparisons, flow (no torch)
    summaries  tensor statistics, at the firing and on first read
    autograd   autograd nodes: introspection and node hooks
    records    plain records and trace files (no torch)

Names are imported lazily so that reading records or a trace file (`hooktui view`) does
not pay for importing torch.
"""

from importlib import import_module

_EXPORTS = {
    "Breakpoint": "analysis.breakpoints",
    "QuitRequested": "capture.quit",
    "Event": "records.records",
    "ModuleInfo": "records.records",
    "NodeRecord": "records.records",
    "SourceLocation": "records.records",
    "TensorRecord": "records.records",
    "TensorStats": "records.records",
    "TraceInfo": "records.records",
    "Session": "run.session",
    "Trace": "run.session",
    "record": "run.session",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)
