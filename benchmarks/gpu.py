"""hooktui on a GPU (issue 22): what a user there pays, side by side in one process.

    python benchmarks/gpu.py                     # CUDA, or one line "skipped: no CUDA"
    python benchmarks/gpu.py --device cpu --quick   # the same script on the CPU (a dry run)

Prints, per section:
1. the run-through table of the issue: bare forward + backward, plain hooks computing
   statistics with .item(), hooktui.record; µs per firing; host syncs per step
   (torch.cuda.set_sync_debug_mode("warn"), one warning per sync); kernel launches per
   summarised tensor (torch.profiler's cudaLaunchKernel / cuLaunchKernel events, record
   minus bare, over the tensors summarised); peak MB over a bare step's;
2. hooktui.guard beside torch.autograd.detect_anomaly (benchmarks/guard.py), with syncs;
3. the app driven headless on a device model: steps (`n`), `c`, `w`, `q`;
4. every sample model through `hooktui trace --device DEVICE`;
5. the parity patterns (tests/engine/test_parity_patterns.py) with DEVICE as torch's
   default device.

Ratios are medians of alternating runs, with torch.cuda.synchronize() around every timed
step. On the CPU the device path is taken through StatsOptions(defer_host=True). How to
run it on the GPU machine: docs/benchmarks.md, "GPU".
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import torch
from torch.nn import functional as F

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from models import ResNet18Layout, mlp_blocks  # noqa: E402
from run import plain_hooks_step  # noqa: E402

import hooktui  # noqa: E402
from hooktui.engine.summaries import device_reduce, lazy_stats  # noqa: E402
from hooktui.engine.run.inputs import default_loss, split_inputs  # noqa: E402
from hooktui.engine.run.session import Session, record  # noqa: E402
from hooktui.engine.summaries.stats import StatsOptions  # noqa: E402

BUDGET_S = 280  # the whole script: under 5 minutes on one GPU (sections past it are skipped, said so)


# -- the models of the issue ---------------------------------------------------------------
def cases(device: str, quick: bool):
    """(label, model, inputs, loss_fn) for each model of the issue; a line for those whose
    package is missing. `quick`: smaller inputs (the CPU dry run)."""
    batch = 8 if quick else 64
    torch.manual_seed(0)
    x = torch.randn(batch, 3, 32, 32, device=device)
    target = torch.randint(0, 10, (batch,), device=device)
    yield f"ResNet-18 layout, batch {batch}, fp32", ResNet18Layout().to(device), x, lambda out: F.cross_entropy(out, target)
    yield (f"ResNet-18 layout, batch {batch}, bf16", ResNet18Layout().to(device, torch.bfloat16), x.bfloat16(),
           lambda out: F.cross_entropy(out.float(), target))
    batch = 32
    yield f"64 x (Linear(64,64)+GELU), batch {batch}", mlp_blocks().to(device), torch.randn(batch, 64, device=device), None
    try:
        import torchvision
    except ImportError:
        yield "torchvision ResNet-50: skipped, torchvision does not import"
    else:
        batch, side = (2, 64) if quick else (32, 224)
        model = torchvision.models.resnet50().to(device)
        labels = torch.randint(0, 1000, (batch,), device=device)
        yield (f"torchvision ResNet-50, batch {batch}, {side}x{side}", model, torch.randn(batch, 3, side, side, device=device),
               lambda out: F.cross_entropy(out, labels))
    try:
        from transformers import GPT2Config, GPT2LMHeadModel
    except ImportError:
        yield "GPT-2 small: skipped, transformers does not import"
    else:
        layers, batch, tokens = (2, 1, 32) if quick else (12, 8, 256)
        model = GPT2LMHeadModel(GPT2Config(n_layer=layers)).to(device)  # built from its config: no download
        ids = torch.randint(0, 50257, (batch, tokens), device=device)
        yield (f"GPT-2 small ({layers} layers), batch {batch}, {tokens} tokens", model, {"input_ids": ids, "labels": ids},
               lambda out: out.loss)


# -- timing helpers --------------------------------------------------------------------------
def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def bare_step(model, inputs, loss_fn) -> None:
    args, kwargs = split_inputs(inputs)
    out = model(*args, **kwargs)
    (loss_fn(out) if loss_fn else default_loss(out)).backward()
    for p in model.parameters():
        p.grad = None


def side_by_side(fns: list, repeat: int, device: str) -> list[float]:
    """Median seconds of each fn, alternating, synchronised around each run."""
    for fn in fns:
        fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            sync(device)
            start = time.perf_counter()
            fn()
            sync(device)
            times[i].append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def syncs_of(fn, device: str) -> int | None:
    """Host syncs fn makes: warnings of torch.cuda.set_sync_debug_mode("warn")."""
    if not device.startswith("cuda"):
        return None
    fn()
    sync(device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            fn()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    return sum("synchroniz" in str(w.message).lower() for w in caught)


def launches_of(fn, device: str) -> int | None:
    """Kernel launches fn makes (runtime and driver API launch calls, triton's included)."""
    if not device.startswith("cuda"):
        return None
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        sync(device)
    return sum(e.count for e in prof.key_averages() if "LaunchKernel" in e.key)


def peak_mb(fn, device: str) -> float | None:
    if not device.startswith("cuda"):
        return None
    sync(device)
    torch.cuda.reset_peak_memory_stats()
    fn()
    sync(device)
    return torch.cuda.max_memory_allocated() / 2**20


class CountTakes:
    """Device snapshots taken (tensors summarised on the device path)."""

    def __enter__(self):
        self.n = 0
        self._take = lazy_stats.DeviceSnapshot.take.__func__

        def take(cls, *args, **kwargs):
            self.n += 1
            return self._take(cls, *args, **kwargs)

        lazy_stats.DeviceSnapshot.take = classmethod(take)
        return self

    def __exit__(self, *exc) -> None:
        lazy_stats.DeviceSnapshot.take = classmethod(self._take)


def _fmt(value, spec: str, none: str = "n/a") -> str:
    return none if value is None else format(value, spec)


# -- sections ------------------------------------------------------------------------------
def run_through(device: str, quick: bool, options: StatsOptions) -> None:
    repeat = 2 if quick else 7
    print(f"{'model':44} {'firings':>7} {'bare ms':>8} {'plain':>7} {'record':>7} {'us/firing':>9} "
          f"{'syncs bare/plain/rec':>21} {'launch/tensor':>13} {'peak MB +':>10}")
    for case in cases(device, quick):
        if isinstance(case, str):
            print(case)
            continue
        label, model, inputs, loss_fn = case
        bare = lambda: bare_step(model, inputs, loss_fn)  # noqa: E731
        plain = lambda: plain_hooks_step(model, inputs, loss_fn)  # noqa: E731
        traced = lambda: record(model, inputs, loss_fn, options=options)  # noqa: E731
        t_bare, t_plain, t_rec = side_by_side([bare, plain, traced], repeat, device)
        with CountTakes() as takes:
            firings = len(traced().events)
        syncs = [syncs_of(fn, device) for fn in (bare, plain, traced)]
        launches = [launches_of(fn, device) for fn in (bare, traced)]
        per_tensor = None if launches[0] is None or not takes.n else (launches[1] - launches[0]) / takes.n
        peaks = [peak_mb(fn, device) for fn in (bare, traced)]
        extra = None if peaks[0] is None else peaks[1] - peaks[0]
        print(f"{label:44} {firings:>7} {t_bare * 1e3:>8.2f} {t_plain / t_bare:>6.2f}x {t_rec / t_bare:>6.2f}x "
              f"{(t_rec - t_bare) / firings * 1e6:>9.1f} {'/'.join(_fmt(s, 'd') for s in syncs):>21} "
              f"{_fmt(per_tensor, '.2f'):>13} {_fmt(extra, '.1f'):>10}")
        del model, inputs
    print(f"(launch/tensor: record's launches minus bare's, over the {'' if device == 'cpu' else 'device '}"
          "tensors summarised; peak MB +: record's peak over bare's)")


def guard_section(device: str, quick: bool, options: StatsOptions) -> None:
    from guard import measure  # benchmarks/guard.py

    k, rounds = (1, 1) if quick else (3, 5)
    print(f"{'model':44} {'bare ms':>8} {'guard':>7} {'no node':>8} {'anomaly':>8} {'guard/anomaly':>13} {'guard syncs/step':>16}")
    for case in list(cases(device, quick))[:3]:
        if isinstance(case, str) or quick and "bf16" in case[0]:
            continue
        label, model, inputs, loss_fn = case
        if device == "cpu":
            hooktui_guard = hooktui.guard
            hooktui.guard = lambda m, **kw: hooktui_guard(m, stats_options=options, **kw)  # the device path
        try:
            medians = measure(model, inputs, loss_fn, k, rounds)

            def one_guarded_step():
                with hooktui.guard(model):
                    bare_step(model, inputs, loss_fn)

            syncs = syncs_of(one_guarded_step, device)
        finally:
            if device == "cpu":
                hooktui.guard = hooktui_guard
        bare = medians["bare"]
        print(f"{label:44} {bare * 1e3:>8.2f} {medians['guard'] / bare:>6.2f}x {medians['guard_no_node'] / bare:>7.2f}x "
              f"{medians['detect_anomaly'] / bare:>7.2f}x {medians['guard'] / medians['detect_anomaly']:>12.2f}x "
              f"{_fmt(syncs, 'd'):>16}")


def app_section(device: str, options: StatsOptions) -> None:
    try:
        from hooktui.ui.app import HooktuiApp
        from hooktui.ui.sources import LiveSource
    except ImportError as exc:
        print(f"skipped: the app needs textual ({exc}); docs/benchmarks.md says how to carry it to the GPU machine")
        return
    torch.manual_seed(0)
    model = ResNet18Layout().to(device)
    x = torch.randn(64, 3, 32, 32, device=device)
    session = Session(model, x, pause=True, label="ResNet-18 layout", options=options)
    app = HooktuiApp(LiveSource(session), show_timings=False)
    timings: dict[str, list[float]] = {"n": [], "c": [], "w": []}

    async def until(pilot, condition, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise TimeoutError("the app did not get there in time")
            await pilot.pause(0.01)

    async def drive() -> None:
        async with app.run_test(size=(120, 40), notifications=False) as pilot:
            await until(pilot, lambda: app.source.state == "paused" and len(app.history) >= 1, 120)
            for _ in range(20):
                seen, start = len(app.history), time.perf_counter()
                await pilot.press("n")
                await until(pilot, lambda: len(app.history) > seen and app.source.state == "paused", 60)
                await pilot.pause()
                timings["n"].append(time.perf_counter() - start)
            start = time.perf_counter()
            await pilot.press("c")
            await until(pilot, lambda: app.source.state != "paused" and app.source.state != "running", 300)
            await pilot.pause()
            timings["c"].append(time.perf_counter() - start)
            start = time.perf_counter()
            await pilot.press("w")
            await pilot.pause()
            timings["w"].append(time.perf_counter() - start)
            await pilot.press("escape")
            await pilot.press("q")

    asyncio.run(drive())
    n = timings["n"]
    print(f"ResNet-18 layout, batch 64, on {device}, 120x40: {len(n)} steps (n): median {statistics.median(n) * 1e3:.1f} ms, "
          f"max {max(n) * 1e3:.1f} ms; c to the end ({len(app.history)} firings): {timings['c'][0]:.2f} s; "
          f"w (overview): {timings['w'][0] * 1e3:.0f} ms; q: quit; state at the end: {app.source.state}")


def samples_section(device: str, deadline: float) -> None:
    runs = [[str(p)] for p in sorted((ROOT / "sample_models").glob("*.py"))]
    runs.append([str(ROOT / "sample_models" / "nan_hunt.py"), "--stop-at-nonfinite"])  # exit 3: stopped there, as it should
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    for args in runs:
        name = " ".join([Path(args[0]).name, *args[1:]])
        if time.monotonic() > deadline:
            print(f"{name:40} skipped: past the time budget")
            continue
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "hooktui", "trace", *args, "--device", device], env=env,
                              capture_output=True, text=True, timeout=120)
        lines = (done.stdout.strip().splitlines() or [""])
        tail = (done.stderr.strip().splitlines() or [""])[-1]
        fine = done.returncode == (3 if "--stop-at-nonfinite" in args else 0)
        print(f"{name:40} exit {done.returncode}{'' if fine else ' (unexpected)'}  {time.perf_counter() - start:5.1f} s  "
              f"{len(lines)} lines{'' if fine else '  ' + tail[:120]}")


def parity_section(device: str) -> None:
    env = dict(os.environ, HOOKTUI_BENCH_DEVICE=device,
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "benchmarks"), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "default_device", "-p", "no:cacheprovider",
                           str(ROOT / "tests" / "engine" / "test_parity_patterns.py")],
                          env=env, capture_output=True, text=True, timeout=240, cwd=ROOT)
    lines = done.stdout.strip().splitlines()
    failed = [line for line in lines if line.startswith("FAILED")]
    print(f"tests/engine/test_parity_patterns.py with {device} as the default device: {lines[-1] if lines else done.stderr[-300:]}")
    print("  (the default device is a TorchFunctionMode: on the CPU every pattern passes under it)")
    for line in failed[:10]:
        print("  " + line[:160])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda", help="cuda (default) or cpu (a dry run of this script)")
    parser.add_argument("--quick", action="store_true", help="smaller models and fewer repeats")
    args = parser.parse_args()
    device = args.device
    if device.startswith("cuda") and not torch.cuda.is_available():
        print("skipped: no CUDA")
        return
    if device == "cpu":
        torch.set_num_threads(1)  # as benchmarks/run.py: shared CPUs, ratios that mean something
    started = time.monotonic()
    deadline = started + BUDGET_S
    # On the CPU the device path is what is measured: the snapshot as a CUDA tensor takes it.
    options = StatsOptions(defer_host=device == "cpu")
    name = torch.cuda.get_device_name(device) if device.startswith("cuda") else "CPU"
    print(f"{name}; torch {torch.__version__}; python {sys.version.split()[0]}")
    probe = torch.zeros(2, device=device)
    triton_path = device_reduce.uses_triton(probe)
    print(f"device summaries: {'one triton kernel' if triton_path else 'torch ops'}"
          f"{'' if device_reduce.fallback_reason is None else ' (' + device_reduce.fallback_reason + ')'}")
    sections = [
        ("1. run-through (forward + backward, medians side by side, ratios to bare)", lambda: run_through(device, args.quick, options)),
        ("2. hooktui.guard beside torch.autograd.detect_anomaly (per step)", lambda: guard_section(device, args.quick, options)),
        ("3. the app, headless", lambda: app_section(device, options)),
        (f"4. sample models through `hooktui trace --device {device}`", lambda: samples_section(device, deadline)),
        ("5. parity patterns", lambda: parity_section(device)),
    ]
    for title, section in sections:
        print()
        print(title)
        if time.monotonic() > deadline:
            print("skipped: past the time budget")
            continue
        start = time.monotonic()
        try:
            section()
        except Exception as exc:  # noqa: BLE001 - one section failing must not hide the others' figures
            print(f"FAILED: {type(exc).__name__}: {exc}")
        print(f"({time.monotonic() - start:.0f} s)")
        sys.stdout.flush()
    if device_reduce.fallback_reason is not None and triton_path:
        print(f"note: the triton kernel fell back during the run: {device_reduce.fallback_reason}")
    print(f"\ntotal {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
