"""One hooktui run at a time per process: `record`, `debug` and `guard` claim it on the
thread that calls them, and a call from another thread while it is held is refused.

Why refused rather than run side by side: a run patches process-wide state for its
duration (torch.Tensor.register_hook, torch.autograd.grad/backward and the autograd engine:
user_hooks.py, backward_calls.py). Two runs on two threads would install and remove those
patches out of order (the process kept hooktui's wrappers after both ended), and each run's
backward would be noticed by the other's tracer. The same thread may claim it again (a
`hooktui.debug` step inside a `hooktui.guard` block); threads a run starts itself (the
app's model thread, a model's own worker threads) are part of that run, not claims.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_owner: int | None = None
_owner_name = ""
_depth = 0


class ConcurrentRunError(RuntimeError):
    """A second thread asked for a hooktui run while another thread's run was going on."""


@contextmanager
def claimed(what: str) -> Iterator[None]:
    global _owner, _owner_name, _depth
    me = threading.current_thread()
    with _lock:
        if _owner is not None and _owner != me.ident:
            raise ConcurrentRunError(
                f"hooktui.{what}: thread {me.name!r} cannot start a run while thread {_owner_name!r} is inside "
                "hooktui.record, debug or guard: hooktui watches one thread's run at a time per process "
                "(run them one after the other, or in separate processes)")
        _owner, _owner_name = me.ident, me.name
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                _owner, _owner_name = None, ""
