"""Peak memory of `hooktui trace` on a model with one 1e8-element activation, beside a bare
forward + backward of the same model (issue 35, item 5: "one 1e8-element activation costs two
extra copies"). Each run is a fresh process; peak RSS from /usr/bin/time's %M (Linux).

    .venv/bin/python benchmarks/big_activation.py [--elements 100000000]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MODEL = textwrap.dedent(
    """
    import torch
    from torch import nn

    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.tensor(2.0))

        def forward(self, x):
            y = x * self.w
            return {out}

    model = Scale()
    inputs = {inputs}
    """
)
BARE = textwrap.dedent(
    """
    import importlib.util, sys
    spec = importlib.util.spec_from_file_location("m", sys.argv[1])
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
    out = m.model(m.inputs)  # held through backward, as a training step holds it (and hooktui's run)
    out.sum().backward()
    """
)


def variants(n: int) -> dict[str, tuple[str, str]]:
    side = int(n ** 0.5)
    return {
        "contiguous float32": ("y", f"torch.ones({n})"),
        "transposed (non-contiguous) float32": ("y.t()", f"torch.ones({side}, {side})"),
        "float32 holding NaN and Inf": ("y", f"torch.ones({n}).index_fill_(0, torch.tensor([3, 5]), float('nan')).index_fill_(0, torch.tensor([7]), float('inf'))"),
    }


def peak_kb(argv: list[str]) -> int:
    result = subprocess.run(["/usr/bin/time", "-f", "%M", *argv], cwd=ROOT, capture_output=True, text=True,
                            env={k: v for k, v in os.environ.items() if not k.startswith("PYTHON")})
    return int(result.stderr.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--elements", type=int, default=100_000_000)
    args = parser.parse_args()
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}, "
          f"load {os.getloadavg()[0]:.1f}; {args.elements:,} elements ({args.elements * 4 / 1e6:.0f} MB as float32)")
    print("| activation | bare step | hooktui trace --json | trace (table) | extra (json) |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for name, (out, inputs) in variants(args.elements).items():
            model = Path(folder) / "big.py"
            model.write_text(MODEL.format(out=out, inputs=inputs))
            bare = peak_kb([sys.executable, "-c", BARE, str(model)])
            traced = peak_kb([sys.executable, "-m", "hooktui", "trace", str(model), "--json"])
            table = peak_kb([sys.executable, "-m", "hooktui", "trace", str(model)])
            print(f"| {name} | {bare / 1024:.0f} MiB | {traced / 1024:.0f} MiB | {table / 1024:.0f} MiB | "
                  f"{(traced - bare) / 1024:+.0f} MiB |", flush=True)


if __name__ == "__main__":
    main()
