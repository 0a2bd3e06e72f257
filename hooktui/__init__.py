"""hooktui: a terminal debugger that pauses inside every PyTorch hook firing."""

from .engine import Event, Session, Trace, record

__version__ = "0.1.0"
__all__ = ["Event", "Session", "Trace", "record", "__version__"]
