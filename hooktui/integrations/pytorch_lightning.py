"""`HooktuiCallback` for the standalone `pytorch_lightning` package (`import pytorch_lightning
as pl`); `lightning` users take lightning.py's. The same callback (lightning_hooks.py)."""

from __future__ import annotations

try:
    from pytorch_lightning import Callback
except ImportError:
    raise ImportError("hooktui.integrations.pytorch_lightning needs pytorch_lightning: pip install pytorch-lightning") from None

from .lightning_hooks import LightningHooks


class HooktuiCallback(LightningHooks, Callback):
    """See hooktui.integrations.lightning.HooktuiCallback."""
