"""Where one firing's microseconds go, on the 64 x (Linear+GELU) model at batch 32, 1 thread.

A diagnostic. Each part of hooktui's per-firing work is a set of engine functions; for
one run they are wrapped with a timer that charges the time spent in each to its part,
minus what is spent in the functions of other parts that it calls (exclusive time). The
timer's own cost (measured here on a wrapped no-op, per wrapped call) is taken off each
part. What no part claims ("hook entry and the rest") is hooktui's step minus the bare
step minus the parts: PyTorch calling the hooks (three forward hooks a module, a node
pre-hook per autograd node, a post-accumulate-grad hook per parameter), hooktui's hook
wrappers, and the model's own work that hooks slow down. The step times themselves
(bare, plain `.item()` hooks, hooktui.record) are measured unwrapped, side by side
(medians, alternating), as run.py does.

    python benchmarks/firing_profile.py [--repeat N] [--blocks 64] [--tree PATH]

`--tree PATH`: profile another checkout's engine with this script's parts (run it with
that checkout's interpreter: PATH/.venv/bin/python), to set two trees' profiles side by side.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
# The engine profiled: this checkout's, or the one named by --tree (read before the imports).
TREE = Path(sys.argv[sys.argv.index("--tree") + 1]).resolve() if "--tree" in sys.argv[:-1] else ROOT
sys.path.insert(0, str(TREE))
sys.path.insert(0, str(ROOT / "benchmarks"))
import hooktui  # noqa: E402,F401  (from TREE, before run.py puts this checkout first on the path)

from models import mlp_case  # noqa: E402
from run import bare_step, machine, plain_hooks_step, side_by_side  # noqa: E402

from hooktui.engine.autograd import node_hooks, nodes  # noqa: E402
from hooktui.engine.capture import grad_kinds, param_grads, tracer  # noqa: E402
from hooktui.engine.run import gate, lifecycle, session  # noqa: E402
from hooktui.engine.summaries import stats  # noqa: E402

# part -> [(owner, attribute)]: the functions whose time is that part's. A name missing
# from an owner (another version of the engine) is skipped.
PARTS: list[tuple[str, list[tuple[object, str]]]] = [
    ("forward hooks: call bookkeeping", [(tracer.Tracer, "_pre_hook"), (tracer.Tracer, "_post_hook"),
                                         (tracer.Tracer, "_raised_hook"), (tracer, "output_slots")]),
    ("naming (tensors of a call)", [(tracer, "call_tensors"), (tracer, "named_tensors")]),
    ("source line of a call", [(tracer, "caller_location")]),
    ("summaries (stats.describe)", [(stats, "describe")]),
    ("node records (describe_node)", [(nodes, "describe_node"), (nodes, "described")]),
    ("record building (Event, numbering)", [(tracer.Tracer, "fire_event"), (tracer.Tracer, "make_event"),
                                            (tracer.Tracer, "fire_call"), (tracer.Tracer, "describe"),
                                            (tracer.Tracer, "_describe_all")]),
    ("notes", [(tracer.Tracer, "_notes")]),
    ("param_grad: which calls, grad kinds", [(param_grads.ParamGradHooks, "_fire"), (grad_kinds.GradKinds, "notes")]),
    ("the gate and the emit (session)", [(session.Session, "_emit"), (gate.Gate, "check")]),
    ("backward: placing watches", [(tracer.Tracer, "_place_watches"), (tracer.Tracer, "_watch_call")]),
    ("backward: node hooks, ordering", [(node_hooks, "_dispatch"), (node_hooks.GradWatch, "_arrive"),
                                        (tracer.Tracer, "_release"), (tracer.Tracer, "_on_grad_output"),
                                        (tracer.Tracer, "_on_grad_input"), (nodes, "node_started")]),
    ("backward: firing bodies", [(tracer.Tracer, "_fire_grad_output"), (tracer.Tracer, "_fire_grad_input")]),
    # Once per run, shared out over its firings: the model walked (or its kept walk checked),
    # described, its hooks found, the tracer made, every hook put in and taken out.
    ("run setup: walk, describe, hooks in/out", [(session.Session, "__init__"), (lifecycle.TracedRun, "__init__"),
                                                 (lifecycle.TracedRun, "install"), (lifecycle.TracedRun, "remove_hooks"),
                                                 (lifecycle.TracedRun, "end")]),
]


class Timer:
    def __init__(self) -> None:
        self.spent: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self.stack: list[str] = []
        self.mark = 0.0

    def wrap(self, part: str, fn):
        clock = time.perf_counter
        spent, calls, stack = self.spent, self.calls, self.stack
        spent.setdefault(part, 0.0)
        calls.setdefault(part, 0)

        def timed(*args, **kwargs):
            now = clock()
            if stack:
                spent[stack[-1]] += now - self.mark
            stack.append(part)
            calls[part] += 1
            self.mark = now
            try:
                return fn(*args, **kwargs)
            finally:
                now = clock()
                spent[stack.pop()] += now - self.mark
                self.mark = now

        return timed


def wrapped_run(run, repeat: int) -> tuple[dict[str, float], dict[str, int]]:
    """Exclusive seconds and calls per part, summed over `repeat` runs."""
    timer = Timer()
    saved = []
    for part, targets in PARTS:
        for owner, attr in targets:
            fn = owner.__dict__.get(attr) if isinstance(owner, type) else getattr(owner, attr, None)
            if fn is None:
                continue
            saved.append((owner, attr, fn))
            setattr(owner, attr, timer.wrap(part, fn))
    try:
        for _ in range(repeat):
            run()
    finally:
        for owner, attr, fn in saved:
            setattr(owner, attr, fn)
    return timer.spent, timer.calls


def wrapper_cost() -> float:
    """Seconds a timed wrapper adds to one call (a wrapped no-op, against the no-op)."""
    timer = Timer()
    noop = lambda: None  # noqa: E731
    timed = timer.wrap("calibration", noop)
    outer = timer.wrap("outer", lambda: timed())
    n = 20000
    best = []
    for fn in (noop, timed, outer):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best.append((time.perf_counter() - start) / n)
    # Per wrapped call, nested as they are in a run.
    return max(best[1] - best[0], 0.0)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--blocks", type=int, default=64)
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose engine is profiled")
    args = parser.parse_args()
    torch.set_num_threads(1)
    label, model, x, loss_fn = mlp_case(args.blocks)
    firings = len(session.record(model, x, loss_fn).events)
    run = lambda: session.record(model, x, loss_fn)  # noqa: E731
    bare, plain, traced = side_by_side(
        [lambda: bare_step(model, x, loss_fn), lambda: plain_hooks_step(model, x, loss_fn), run], args.repeat)
    spent, calls = wrapped_run(run, args.repeat)
    cost = wrapper_cost()
    per = 1e6 / (firings * args.repeat)
    overhead_us = (traced - bare) / firings * 1e6
    print(f"machine: {machine()}")
    print(f"engine: {Path(session.__file__).resolve().parents[3]}")
    print(f"model: {label}: {firings} firings a step")
    print(f"bare {bare * 1e3:.2f} ms; plain .item() hooks {plain / bare:.2f}x bare; hooktui.record {traced / bare:.2f}x bare "
          f"= {traced / plain:.2f}x the plain hooks; hooktui's cost {overhead_us:.1f} us a firing "
          f"(plain hooks' {(plain - bare) / firings * 1e6:.1f})")
    print(f"timer cost taken off: {cost * 1e6:.2f} us a wrapped call")
    print()
    print(f"{'part':40} {'us/firing':>10} {'share':>6} {'calls/firing':>13}")
    claimed = 0.0
    rows = []
    for part, _ in PARTS:
        if part not in spent:
            continue
        us = max(spent[part] - calls[part] * cost, 0.0) * per
        claimed += us
        rows.append((part, us, calls[part] / (firings * args.repeat)))
    rows.append(("hook entry and the rest", overhead_us - claimed, None))
    for part, us, per_firing in rows:
        calls_text = "" if per_firing is None else f"{per_firing:.2f}"
        print(f"{part:40} {us:>10.2f} {us / overhead_us:>6.0%} {calls_text:>13}")
    print(f"{'total (hooktui - bare)':40} {overhead_us:>10.2f}")


if __name__ == "__main__":
    main()
