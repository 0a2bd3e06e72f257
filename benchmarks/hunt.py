"""The cost of hunting a NaN: `c` to the end of a finite model with the non-finite
breakpoint off and on (on: every tensor's exact NaN/Inf count is checked at every firing,
forward ops note their creation line, every backward node's output is checked), beside
`torch.autograd.detect_anomaly()` on a bare step. Ratios to a bare step, side by side in
one run (benchmarks/run.py explains the method). Run with `make bench`.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from models import mlp_case, resnet_case  # noqa: E402
from run import bare_step, machine, side_by_side  # noqa: E402

from hooktui.engine.analysis.breakpoints import Breakpoint  # noqa: E402
from hooktui.engine.run.session import Session  # noqa: E402


def continue_to_end(model, inputs, loss_fn, nonfinite: bool) -> None:
    """What `c` does in the app with no breakpoint reached: run every firing, never pause."""
    session = Session(model, inputs, loss_fn, pause=False)
    if nonfinite:
        session.add_breakpoint(Breakpoint.nonfinite())
    session.gate.resume()
    trace = session.run()
    assert trace.state == "finished" and session.gate.stop is None


def anomaly_step(model, inputs, loss_fn) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Anomaly Detection has been enabled": once per call
        with torch.autograd.detect_anomaly():
            bare_step(model, inputs, loss_fn)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"machine: {machine()}")
    print()
    print("c to the end of a finite model, ratios to a bare step (medians, side by side):")
    print(f"{'model':38} {'bare ms':>8} {'detect_anomaly':>15} {'c, no bp':>9} {'c, ! on':>8} {'! on / off':>11}")
    for label, model, inputs, loss_fn in (resnet_case(), mlp_case()):
        bare, anomaly, off, on = side_by_side(
            [lambda: bare_step(model, inputs, loss_fn), lambda: anomaly_step(model, inputs, loss_fn),
             lambda: continue_to_end(model, inputs, loss_fn, False), lambda: continue_to_end(model, inputs, loss_fn, True)],
            args.repeat,
        )
        print(f"{label:38} {bare * 1e3:>8.2f} {anomaly / bare:>14.2f}x {off / bare:>8.2f}x {on / bare:>7.2f}x {on / off:>10.2f}x")


if __name__ == "__main__":
    main()
