"""The app itself with ~100,000 firings in its history: its memory, and how long `q` takes.

Runs `python -m hooktui open` on a pseudo-terminal (120x40) on the 64-block MLP repeated
to ~100,000 firings (benchmarks/memory.py's model), presses `c` to run it through to the
end with every firing recorded, then reads the app process's resident memory (RSS, from
/proc) and presses `q`, timing how long the process takes to end. Linux only.

Two figures a firing, as the growth of RSS from the pause at the first firing to the run's end:
- *held*: measured as benchmarks/memory.py measures `record()`, so the two compare: before
  each reading the app's process collects its garbage and hands freed heap pages back
  (`gc.collect()` and glibc's `malloc_trim(0)`, run by a thread the benchmark's model file
  starts: benchmark code, not the app's). What the app holds for its firings.
- *RSS as it is*: no trim; the run's high-water marks (pages freed but kept by the
  allocator, which the next run reuses) included: an upper bound, and a noisy one (the
  baseline moves by +-40 MB from run to run with what the allocator kept at the pause).

The model file runs one bare forward + backward when it is built (as benchmarks/memory.py
does before its baseline), so the baseline at the first pause already holds what the
model's own step costs: its gradients (the traced run accumulates into them, as a second
step of the user's loop would) and its autograd graph, freed but kept by the allocator.
`--cold` leaves that step out: the growth then includes the model's own step and its final
.grad too (~2 KB per firing of it on this model).

Run with `.venv/bin/python benchmarks/app_memory.py` (`make bench` does).
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import re
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MODEL = '''
import ctypes
import gc
import os
import threading
import time

import torch
from torch import nn

TRIM_FOLDER = {folder!r}


def _trim_on_request():
    """Benchmark code, not the app's: when the benchmark asks (a file appears), collect and
    hand freed heap pages back, as benchmarks/memory.py does before each of its readings."""
    request, done = os.path.join(TRIM_FOLDER, "trim.request"), os.path.join(TRIM_FOLDER, "trim.done")
    while True:
        if os.path.exists(request):
            gc.collect()
            try:
                ctypes.CDLL("libc.so.6").malloc_trim(0)
            except (OSError, AttributeError):
                pass
            os.replace(request, done)
        time.sleep(0.05)


if not getattr(torch, "_app_memory_trimmer", False):
    torch._app_memory_trimmer = True
    threading.Thread(target=_trim_on_request, daemon=True).start()

def build_model():
    torch.manual_seed(0)
    layers = []
    for _ in range({blocks}):
        layers += [nn.Linear(64, 64), nn.GELU()]
    model = nn.Sequential(*layers)
    if {warm}:
        # One bare step first, as benchmarks/memory.py does: the model's own gradients and
        # autograd graph are then in the baseline, and what grows is what the app holds.
        model(torch.randn(32, 64)).sum().backward()
    return model

def example_inputs():
    return torch.randn(32, 64)
'''


class Terminal:
    """The app on a pseudo-terminal; everything it writes is kept."""

    def __init__(self, args: list[str], size=(120, 40)) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        env.update({"TERM": "xterm-256color", "COLUMNS": str(size[0]), "LINES": str(size[1])})
        self.process = subprocess.Popen([sys.executable, "-m", "hooktui", *args], stdin=slave, stdout=slave, stderr=slave,
                                        cwd=ROOT, env=env, start_new_session=True)
        os.close(slave)
        self.output = bytearray()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            self.output += data

    def wait_for(self, pattern: bytes, timeout: float) -> None:
        """Until `pattern` is in what the app wrote: every byte read, once. (Only the last
        20,000 were searched: "paused" is written once, in the first frame, with ~31 KB after
        it, and a check starved of the CPU missed it for good; a test hung on it in CI.)"""
        deadline = time.monotonic() + timeout
        searched = 0
        while True:
            output = bytes(self.output)
            searched = min(searched, len(output))  # the output was cleared meanwhile
            if re.search(pattern, output[max(0, searched - len(pattern)):]):
                return
            searched = len(output)
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"no {pattern!r} on the app's screen")
            time.sleep(0.05)

    def _tree(self) -> list[int]:
        """The app's process and its descendants."""
        out, pids = [], [self.process.pid]
        while pids:
            pid = pids.pop()
            out.append(pid)
            try:
                for task in Path(f"/proc/{pid}/task").iterdir():
                    pids += [int(p) for p in (task / "children").read_text().split()]
            except OSError:
                continue
        return out

    def cpu_s(self) -> float:
        """CPU seconds the app's process tree has used (Linux /proc)."""
        total = 0
        for pid in self._tree():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            total += int(fields[11]) + int(fields[12])  # utime, stime
        return total / os.sysconf("SC_CLK_TCK")

    def wait_until_idle(self, timeout: float, quiet: float = 3.0) -> None:
        """Until "finished" is on the screen or the app has used no CPU for `quiet` seconds
        (the run is over: the status line's text can reach the terminal split by escape codes)."""
        deadline = time.monotonic() + timeout
        last, since = self.cpu_s(), time.monotonic()
        while not re.search(rb"finished", bytes(self.output[-20000:])):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the app did not finish the run")
            time.sleep(0.5)
            now = self.cpu_s()
            if now - last > 0.05:
                last, since = now, time.monotonic()
            elif time.monotonic() - since > quiet:
                return

    def rss_mb(self) -> float:
        """The RSS of the app's process tree: `hooktui open` supervises the app from a parent
        process (hooktui/supervise.py), whose own few MB stay the same."""
        return sum(self.rss_each().values())

    def rss_each(self) -> dict[int, float]:
        """Each process's RSS (MB), by process id."""
        each = {}
        for pid in self._tree():
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        each[pid] = int(line.split()[1]) / 1024
            except OSError:
                continue
        return each


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--firings", type=int, default=100_000)
    parser.add_argument("--cold", action="store_true", help="no bare step before the baseline (see above)")
    args = parser.parse_args()
    blocks = max(1, round(args.firings / 644 * 64))
    with tempfile.TemporaryDirectory() as folder:
        model = Path(folder) / "mlp_100k.py"
        model.write_text(MODEL.format(blocks=blocks, warm=not args.cold, folder=folder))
        app = Terminal(["open", str(model)])
        try:
            app.wait_for(rb"paused", 300)
            time.sleep(1.0)
            before = app.rss_mb()
            held_before = trimmed_rss_mb(app, Path(folder))
            each_before = app.rss_each()
            start = time.monotonic()
            app.output.clear()
            os.write(app.master, b"c")
            app.wait_until_idle(1800)
            ran = time.monotonic() - start
            time.sleep(2.0)  # the last redraws
            after = app.rss_mb()
            each_after = app.rss_each()
            held_after = trimmed_rss_mb(app, Path(folder))
            # 12 firings a block (legacy ones included, as the app records them), 5 of the root.
            firings = 12 * blocks + 5
            found = re.findall(rb"(\d[\d,]*) forward \+ (\d[\d,]*) backward", bytes(app.output))
            if found:
                firings = sum(int(n.replace(b",", b"")) for n in found[-1])
            start = time.monotonic()
            os.write(app.master, b"q")
            app.process.wait(timeout=60)
            quit_s = time.monotonic() - start
        finally:
            if app.process.poll() is None:
                # The whole group: `hooktui open` is a supervisor and the app, and an app left
                # without its supervisor and its terminal spins on the closed terminal's input.
                os.killpg(app.process.pid, signal.SIGKILL)

    def per_firing(mb: float) -> str:
        return f"{mb * 1024 / firings:.2f} KB/firing" if firings else "?"

    print(f"the app, {blocks} x (Linear(64,64)+GELU): {firings} firings run through with c in {ran:.0f} s")
    baseline = "cold: no bare step before it" if args.cold else "after one bare step of the model"
    print(f"  held (collected and trimmed, as memory.py measures record()): paused at the first firing "
          f"{held_before:.0f} MB, after the run {held_after:.0f} MB ({per_firing(held_after - held_before)})")
    print(f"  RSS as it is ({baseline}): paused {before:.0f} MB, after the run {after:.0f} MB "
          f"({per_firing(after - before)}, run's high-water marks included)")
    print("  each process, as it is: " + ", ".join(f"{'supervisor' if pid == app.process.pid else 'app'} "
                                                    f"{each_before.get(pid, 0):.0f} -> {mb:.0f} MB" for pid, mb in each_after.items()))
    # The run's own final .grad: the session keeps them for the console after the run (pdb's
    # post-mortem, `grads`) and puts the model's own .grad back: as large as the parameters,
    # whatever the number of firings. (memory.py's record() lets its session go, and them.)
    grads_mb = blocks * (64 * 64 + 64) * 4 / 2**20
    print(f"  of it the run's final .grad kept for the console {grads_mb:.0f} MB; without them: held "
          f"{per_firing(held_after - held_before - grads_mb)}, RSS as it is {per_firing(after - before - grads_mb)}")
    print(f"  q to the end of the process: {quit_s:.2f} s (exit status {app.process.returncode})")


def trimmed_rss_mb(app: Terminal, folder: Path, timeout: float = 120) -> float:
    """The app's RSS once its process has collected and trimmed (the model file's thread)."""
    done = folder / "trim.done"
    done.unlink(missing_ok=True)
    (folder / "trim.request").write_text("")
    deadline = time.monotonic() + timeout
    while not done.exists():
        if app.process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the app's process did not trim")
        time.sleep(0.05)
    time.sleep(0.2)
    return app.rss_mb()


if __name__ == "__main__":
    main()
