"""The engine: torch hooks, the pause gate and tensor summaries. It never imports Textual;
it hands plain records (records.py) to whoever listens."""

from .gate import Breakpoint, QuitRequested
from .records import Event, ModuleInfo, NodeRecord, SourceLocation, TensorRecord, TensorStats, TraceInfo
from .session import Session, Trace, record

__all__ = [
    "Breakpoint",
    "Event",
    "ModuleInfo",
    "NodeRecord",
    "QuitRequested",
    "Session",
    "SourceLocation",
    "TensorRecord",
    "TensorStats",
    "Trace",
    "TraceInfo",
    "record",
]
