"""`hooktui.arm(model)`: a training that `hooktui attach PID` can open later, from elsewhere.

Armed and nobody attached, the model carries one forward pre-hook on its root and nothing
else: it counts the step (a forward with grad) and reads one attribute. A daemon thread waits
in accept() on this process's Unix socket (attach/listener.py), asleep in the kernel: no
thread wakes the GIL. When an attacher has asked for a step (loop/attached.py), the next
root forward that it wants begins an ArmedStep (engine/run/armed_step.py): every hook on for
that one step, off at its end. The training computes bitwise what it computes unarmed.
"""

from __future__ import annotations

import atexit
import os
import threading
import weakref
import torch
from torch import nn

from ..attach import rendezvous, wire
from ..attach.listener import Listener
from ..engine.capture.contain import failure_text
from ..engine.records import ranks
from ..engine.run.armed_step import ArmedStep
from ..engine.run.one_run import ConcurrentRunError
from . import say

__all__ = ["Armed", "arm"]

_ARMED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> its Armed
_lock = threading.Lock()


def arm(model: nn.Module, *, label: str | None = None) -> Armed:
    """Let `hooktui attach PID` open a step of `model`'s training from another terminal.

    Returns a handle; `handle.disarm()` (idempotent; also at exit) takes the hook off and
    stops listening. Arming the same model again returns its handle. Where this process
    cannot listen safely (its folder is another user's or open to others), a HooktuiWarning
    says why and the handle does nothing: the training is never stopped by hooktui."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"hooktui.arm needs the model (an nn.Module), got {type(model).__name__}")
    with _lock:
        armed = _ARMED.get(model)
        if armed is not None and armed.armed:
            return armed
        armed = Armed(model, label or type(model).__name__)
        _ARMED[model] = armed
    return armed


class Armed:
    def __init__(self, model: nn.Module, label: str) -> None:
        self.model = model
        self.label = label
        self.steps = 0  # forwards with grad of the root so far: the number of the next step is this
        self.attachment = None  # the attacher waiting for a step, or in one (loop/attached.py)
        self.step: ArmedStep | None = None  # the step traced now
        self.armed = False
        self._handle = None
        self._listener: Listener | None = None
        self._info_path = None
        try:
            where = rendezvous.folder(create=True)
            rendezvous.prune_stale(where)  # pairs left by processes killed by a signal
            token = rendezvous.new_token()
            rank, world = ranks.rank_and_world()
            info = rendezvous.ArmedInfo(os.getpid(), token, rank, world, _group(), os.getppid())
            self._info_path = rendezvous.write_info(where, info)
            self._listener = Listener(rendezvous.socket_path(os.getpid(), where), token, self._welcome, self._attached)
        except (rendezvous.RendezvousError, OSError) as exc:
            self._remove_files()
            say.warn(f"hooktui.arm: not armed: {getattr(exc, 'strerror', None) or exc}")
            return
        self._handle = model.register_forward_pre_hook(self._root_pre, with_kwargs=True)
        self.armed = True
        me = weakref.ref(self)
        atexit.register(_disarm_at_exit, me)
        os.register_at_fork(after_in_child=lambda: _forked(me))

    @property
    def socket_path(self):
        return None if self._listener is None else self._listener.path

    def disarm(self) -> None:
        """The hook off, the socket and token file gone; an attacher is let go, and a step
        being traced goes on unpaused to its end, where its hooks come off. Idempotent."""
        if not self.armed:
            return
        self.armed = False
        if self._handle is not None:
            self._handle.remove()
            self._handle = None
        attachment = self.attachment
        if attachment is not None:
            attachment.let_go("the training disarmed hooktui")
        step = self.step
        if step is not None and not step.in_backward:  # a forward that raised, or had no backward
            self.step = None
            step.end()
        if self._listener is not None:
            self._listener.close()
        self._remove_files()

    def _remove_files(self) -> None:
        if self._info_path is not None:
            try:
                os.unlink(self._info_path)
            except OSError:
                pass
            self._info_path = None

    # -- the one check per step (the training thread) --------------------------------------
    def _root_pre(self, module: nn.Module, args: tuple, kwargs: dict):
        if not torch.is_grad_enabled():
            return None
        number = self.steps
        self.steps = number + 1
        if self.attachment is None and self.step is None:
            return None
        return self._step_starts(number, args, kwargs)

    def _step_starts(self, number: int, args: tuple, kwargs: dict):
        step = self.step
        if step is not None:  # the last one's forward had no backward: it is over
            self.step = None
            step.end()
        attachment = self.attachment
        if attachment is None or not attachment.wants(number):
            return None
        try:
            step = ArmedStep(self.model, label=f"{self.label} (hooktui.arm, pid {os.getpid()}, step {number})", number=number)
            attachment.prepare(step)
            self.step = step
            return step.begin(args, kwargs)
        except ConcurrentRunError as exc:
            self.step = None
            attachment.let_go(str(exc))
        except Exception as exc:  # hooktui's own failure: said, and the training goes on
            self.step = None
            say.warn(f"hooktui.arm: could not trace step {number}: {failure_text(exc)}")
            attachment.let_go(f"hooktui failed to trace step {number}: {failure_text(exc)}")
        return None

    def step_ended(self, step: ArmedStep) -> None:
        if self.step is step:
            self.step = None

    # -- the socket's side (its threads) -------------------------------------------------------
    def _welcome(self) -> wire.Welcome:
        rank, world = ranks.rank_and_world()
        return wire.Welcome(pid=os.getpid(), step=self.steps, model=self.label[: wire.TEXT_MAX], rank=rank, world=world)

    def _attached(self, sock, reader) -> None:
        from .attached import Attachment

        Attachment(self, sock, reader).serve()


def arm_first_model() -> None:
    """`hooktui run --armed`: arm the first module the script calls with grad that has
    parameters (the root of its first training forward), then stop looking. Until then a
    global forward pre-hook sees every module call; after, nothing of it is left."""
    from torch.nn.modules.module import register_module_forward_pre_hook

    handle = None

    def first_call(module: nn.Module, _args: tuple) -> None:
        if handle is None or not torch.is_grad_enabled() or next(module.parameters(), None) is None:
            return
        handle.remove()
        armed = arm(module)
        armed.steps += 1  # this forward, whose pre-hooks PyTorch took before arm's existed, is step 0

    handle = register_module_forward_pre_hook(first_call)


def _group() -> str:
    """The run a rank belongs to (torchrun's), so that attach finds its other ranks."""
    parts = [os.environ.get(name, "") for name in ("TORCHELASTIC_RUN_ID", "MASTER_ADDR", "MASTER_PORT")]
    return ":".join(parts)[:512] if any(parts) else ""


def _disarm_at_exit(ref: weakref.ref) -> None:
    armed = ref()
    if armed is not None:
        armed.disarm()


def _forked(ref: weakref.ref) -> None:
    """A child (a DataLoader worker) is not the armed process: it neither listens nor traces."""
    armed = ref()
    if armed is None or not armed.armed:
        return
    armed.armed = False
    armed.attachment = None
    if armed._listener is not None:
        armed._listener.close_in_child()
    armed._info_path = None  # the parent's files: the parent removes them
