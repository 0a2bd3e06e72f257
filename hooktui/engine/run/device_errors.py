"""A model that fails because it mixes devices: what to tell the user instead of torch's text.

The usual cause, once a model runs with `--device cuda`: the model file makes a tensor
itself (a loss target, a hidden state, a mask) with `torch.tensor(...)`, `torch.zeros(...)`
and no `device=`, so it is on the CPU while the model's tensors are on the GPU. torch then
says "Expected all tensors to be on the same device, but found at least two devices,
cuda:0 and cpu!" (the wording varies by op), which names neither the tensor nor the fix.

`advice` recognises those messages from the text alone, so a saved trace's error gets the
same advice as a live one.
"""

from __future__ import annotations

import re

# Phrases torch's device checks use (ATen, the RNN and index kernels, meta/fake tensors).
_MISMATCH = re.compile(
    r"to be on the same device|on the same device as the indexed tensor|tensors are not at the same device"
    r"|is not on the expected device|expected device .* but got|to have the same device|same device type",
    re.IGNORECASE,
)
_DEVICE = re.compile(r"(?<![\w.])(cpu|cuda(?::\d+)?|mps|xpu(?::\d+)?|meta|hpu(?::\d+)?|privateuseone(?::\d+)?)(?![\w])")


def mismatched_devices(message: str) -> list[str] | None:
    """The devices a device-mismatch message names, first seen first (maybe none); None when
    the message is not about mixed devices."""
    if not _MISMATCH.search(message):
        return None
    seen: list[str] = []
    for name in _DEVICE.findall(message):
        if name not in seen:
            seen.append(name)
    return seen


def advice(message: str, in_loss: bool = False) -> str | None:
    """What to do about a model error whose text is `message`; None when it is not a device
    mismatch. `in_loss`: it was raised while computing the loss (loss_fn)."""
    devices = mismatched_devices(message)
    if devices is None:
        return None
    others = [d for d in devices if d != "cpu"]
    if "cpu" in devices and others:
        what = f"a tensor on the CPU met the model's tensors on {' and '.join(others)}"
    elif len(devices) > 1:
        what = f"tensors on {' and '.join(devices)} met in one operation"
    else:
        what = "tensors on two devices met in one operation"
    if in_loss:
        fix = ("a tensor loss_fn makes (torch.tensor, torch.zeros, ...) is on the CPU unless given a device: "
               "make it on the output's device, e.g. torch.tensor([3], device=output.device)")
    else:
        fix = ("a tensor your code makes (torch.tensor, torch.zeros, ...) is on the CPU unless given a device: "
               "make it where the tensors it meets are, e.g. torch.zeros(n, device=x.device) in forward, "
               "torch.tensor([3], device=output.device) in loss_fn")
    return f"device mismatch: {what}; {fix}"
