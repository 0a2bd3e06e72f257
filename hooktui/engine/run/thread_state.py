"""The thread-local torch state of the thread that asked for a run, carried to the thread
that runs it.

`hooktui.debug` runs the user's step on a worker thread (the app owns the main thread),
but torch keeps grad mode, inference mode, autocast and the current CUDA device and stream
per thread: a step called inside `with torch.autocast(...)` or `torch.no_grad()` must see
the same on the worker, or it would compute something else than without hooktui. The
same is done by torch.nn.DataParallel for its replica threads. Other thread-local state
(saved-tensor hooks, functorch transforms) is not carried: set it inside the step.
"""

from __future__ import annotations

import threading
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import torch

_AUTOCAST_DEVICES = ("cpu", "cuda", "xpu", "mps", "hpu")


def _autocast_state(device: str) -> torch.dtype | None:
    """The autocast dtype on `device` for this thread, or None when autocast is off there."""
    try:
        if torch.is_autocast_enabled(device):
            return torch.get_autocast_dtype(device)
    except (RuntimeError, TypeError, AttributeError):  # a device type this build does not know
        pass
    return None


@dataclass(frozen=True)
class ThreadState:
    thread: int
    grad_enabled: bool
    inference: bool
    autocast: tuple[tuple[str, torch.dtype], ...]
    autocast_cache: bool
    cuda: tuple[int, Any] | None  # (current device, current stream) when CUDA is in use

    @classmethod
    def capture(cls) -> ThreadState:
        autocast = tuple((d, dtype) for d in _AUTOCAST_DEVICES if (dtype := _autocast_state(d)) is not None)
        cuda = None
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            cuda = (torch.cuda.current_device(), torch.cuda.current_stream())
        return cls(
            thread=threading.get_ident(),
            grad_enabled=torch.is_grad_enabled(),
            inference=torch.is_inference_mode_enabled(),
            autocast=autocast,
            autocast_cache=torch.is_autocast_cache_enabled(),
            cuda=cuda,
        )

    @contextmanager
    def applied(self):
        """Run the body with this state; on the thread it was captured on, nothing to do."""
        if threading.get_ident() == self.thread:
            yield
            return
        with ExitStack() as stack:
            if self.cuda is not None:
                device, stream = self.cuda
                stack.enter_context(torch.cuda.device(device))
                stack.enter_context(torch.cuda.stream(stream))
            if self.inference:
                stack.enter_context(torch.inference_mode())
            stack.enter_context(torch.set_grad_enabled(self.grad_enabled))
            for device, dtype in self.autocast:
                stack.enter_context(torch.autocast(device, dtype=dtype, cache_enabled=self.autocast_cache))
            yield
