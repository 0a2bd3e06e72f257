"""Where hooktui.record's time goes, beside the bare step and the plain-hooks floor.

A diagnostic, not a setting users have: each row switches off one part of the work
by replacing it for the duration of the timing (in this process only):

- **no statistics**: every tensor of every firing gets an empty record (no snapshot,
  no exact non-finite counts, no moments);
- **no node records**: firings do not describe their autograd node either;
- **no parameter gradients**: `record(..., param_grads=False)` (a real option).

What is left in the last row is the cost of the hooks themselves: the forward hooks,
the backward's node hooks and the ordering of firings. Timings alternate within each
repeat (medians, one torch thread), as in run.py. `--quick`: fewer repeats.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import contextmanager
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from models import mlp_case, resnet_case  # noqa: E402
from run import bare_step, machine, plain_hooks_step, side_by_side  # noqa: E402

from hooktui.engine.autograd import nodes
from hooktui.engine.run import session
from hooktui.engine.summaries import stats  # noqa: E402
from hooktui.engine.records.records import TensorRecord  # noqa: E402


def _empty_record(name, tensor, options=None, **extra):
    return TensorRecord(name=name, shape=None, missing="(decompose.py: statistics switched off)")


@contextmanager
def _switched_off(no_stats: bool, no_nodes: bool):
    saved = stats.describe, nodes.describe_node
    if no_stats:
        stats.describe = _empty_record
    if no_nodes:
        nodes.describe_node = lambda node, depth=3: None
    try:
        yield
    finally:
        stats.describe, nodes.describe_node = saved


def rows(model, inputs, loss_fn):
    def traced(no_stats=False, no_nodes=False, param_grads=True):
        def run():
            with _switched_off(no_stats, no_nodes):
                session.record(model, inputs, loss_fn, param_grads=param_grads)
        return run

    return [
        ("bare", lambda: bare_step(model, inputs, loss_fn)),
        ("plain hooks (the floor)", lambda: plain_hooks_step(model, inputs, loss_fn)),
        ("hooktui.record", traced()),
        ("  no statistics", traced(no_stats=True)),
        ("  no statistics, no node records", traced(no_stats=True, no_nodes=True)),
        ("  and no parameter gradients", traced(no_stats=True, no_nodes=True, param_grads=False)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    repeat = 5 if args.quick else args.repeat
    torch.set_num_threads(1)
    print(f"machine: {machine()}")
    for label, model, inputs, loss_fn in (resnet_case(), mlp_case()):
        cases = rows(model, inputs, loss_fn)
        medians = side_by_side([fn for _, fn in cases], repeat)
        print()
        print(f"{label}: {'ms':>7} {'x bare':>7}")
        for (name, _), median in zip(cases, medians):
            print(f"  {name:36} {median * 1e3:7.2f} {median / medians[0]:6.2f}x")


if __name__ == "__main__":
    main()
