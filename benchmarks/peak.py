"""A traced step's peak memory and page faults beside a bare step's (ResNet-18 layout,
CIFAR size, batch 64, one torch thread).

- **Peak**: the process's high-water mark (ru_maxrss) after bare steps, then how much
  higher it goes while hooktui.record runs the same step. What record holds beyond the
  model's own step (activations or gradients kept past their use) shows here; the
  summaries themselves are small.
- **Minor page faults per step**, medians, bare and record alternating: memory handed
  back to the OS and faulted in again on the next step (glibc trims its heap when a
  large block is freed at its top) costs time in every step.

Run in its own process (the high-water mark is the process's): `make bench` does.
"""

from __future__ import annotations

import resource
import statistics
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from models import resnet_case  # noqa: E402
from run import bare_step, machine  # noqa: E402

from hooktui.engine.run.session import record  # noqa: E402


def _usage():
    return resource.getrusage(resource.RUSAGE_SELF)


def main() -> None:
    torch.set_num_threads(1)
    print(f"machine: {machine()}")
    label, model, inputs, loss_fn = resnet_case(batch=64)
    for _ in range(3):
        bare_step(model, inputs, loss_fn)
    bare_peak = _usage().ru_maxrss
    for _ in range(3):
        record(model, inputs, loss_fn)
    print(f"{label}: peak RSS of hooktui.record above the bare step's: "
          f"{(_usage().ru_maxrss - bare_peak) / 1024:.0f} MB (bare step's high-water mark {bare_peak / 1024:.0f} MB)")
    faults: dict[str, list[int]] = {"bare": [], "record": []}
    for _ in range(9):
        for name, fn in (("bare", lambda: bare_step(model, inputs, loss_fn)), ("record", lambda: record(model, inputs, loss_fn))):
            before = _usage().ru_minflt
            fn()
            faults[name].append(_usage().ru_minflt - before)
    print("minor page faults per step (medians): " + ", ".join(f"{k} {statistics.median(v):.0f}" for k, v in faults.items()))


if __name__ == "__main__":
    main()
