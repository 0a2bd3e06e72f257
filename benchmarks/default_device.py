"""A pytest plugin for benchmarks/gpu.py: torch's default device is $HOOKTUI_BENCH_DEVICE,
so tests that build their models and tensors without naming a device run there.

    HOOKTUI_BENCH_DEVICE=cuda python -m pytest -p default_device tests/engine/test_parity_patterns.py
"""

import os

import torch


def pytest_configure(config) -> None:
    torch.set_default_device(os.environ.get("HOOKTUI_BENCH_DEVICE", "cpu"))
