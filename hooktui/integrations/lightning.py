"""`HooktuiCallback` for PyTorch Lightning (`import lightning`; the standalone
`pytorch_lightning` package where `lightning` is not installed: pytorch_lightning.py has
its own). What it does: lightning_hooks.py; README: "Lightning and the Hugging Face Trainer".

    trainer = lightning.Trainer(callbacks=[HooktuiCallback(debug_step=4312)])
"""

from __future__ import annotations

try:
    from lightning.pytorch import Callback
except ImportError:
    try:
        from pytorch_lightning import Callback
    except ImportError:
        raise ImportError("hooktui.integrations.lightning needs PyTorch Lightning: pip install lightning") from None

from .lightning_hooks import LightningHooks


class HooktuiCallback(LightningHooks, Callback):
    """`debug_step=N`: open the app on step N (the trainer's global_step; without a terminal,
    a trace file). `record_every=K`: record steps 0, K, 2K, ... to trace files
    (hooktui-<pid>-<n>-step<k>.jsonl). `guard=True` (or a dict of hooktui.guard's options):
    stop at the first NaN/Inf, saying where it was born. `arm=True` (or a dict of hooktui.arm's
    options): `hooktui attach PID` can open a step while the fit runs. `on_quit`: as
    hooktui.debug's."""
