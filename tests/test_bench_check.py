"""`benchmarks/check.py` (make bench-check) runs and prints one parsable line a case.
No time is asserted: only that the command works and says what it measured."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CASE = re.compile(r"^(?P<case>\S+)\s+(?P<ratio>-?\d+\.\d\d)(?P<unit>x|KB)\s+last\s+(?P<last>-|-?\d+\.\d\d(x|KB))")


def test_bench_check_prints_a_ratio_for_each_case():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "check.py"), "--smoke"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("machine: ")
    matches = [m for m in map(CASE.match, lines) if m]
    cases = {m["case"]: float(m["ratio"]) for m in matches}
    assert set(cases) == {"mlp/record_vs_plain", "mlp/record_vs_bare", "mlp/plain_vs_bare",
                          "memory/record_kb", "memory/app_kb", "memory/app_kb_less_grads",
                          "memory/app_held_kb_less_grads"}
    assert {m["case"] for m in matches if m["unit"] == "KB"} == {c for c in cases if c.startswith("memory/")}
    assert all(cases[c] > 0 for c in cases if c.startswith("mlp/"))
    # The app's figure less the parameters' final .grad is the same run's figure, smaller.
    assert cases["memory/app_kb_less_grads"] < cases["memory/app_kb"]
    # One repeat (--smoke): the three ratios come from the same three runs, so hooktui against
    # plain hooks is their two ratios to the bare step divided.
    assert abs(cases["mlp/record_vs_plain"] - cases["mlp/record_vs_bare"] / cases["mlp/plain_vs_bare"]) < 0.02 * cases["mlp/record_vs_plain"] + 0.01
    assert "case(s) worse by more than" in lines[-1]


def test_recorded_ratios_say_where_they_were_measured():
    import json

    recorded = json.loads((ROOT / "benchmarks" / "recorded.json").read_text())
    assert {"date", "commit", "machine", "ratios"} <= set(recorded)
    assert "mlp/record_vs_plain" in recorded["ratios"]


def test_the_app_benchmark_finds_a_word_the_app_wrote_once_long_before_it_looks():
    """app_memory.py waits for "paused" on the app's screen. It is written once, in the
    first frame, with ~31 KB after it; a check that looked at the last 20,000 bytes only,
    starved of the CPU until the rest came, never found it (make test hung on it once)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import app_memory
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))

    class Running:
        def poll(self):
            return None

    terminal = object.__new__(app_memory.Terminal)
    terminal.process = Running()
    terminal.output = bytearray(b"\x1b[1;1H paused " + b"\x1b[0m x" * 6000)
    terminal.wait_for(rb"paused", timeout=2)  # found, not "no b'paused' on the app's screen"
    with pytest.raises(RuntimeError, match="no b'finished'"):
        terminal.wait_for(rb"finished", timeout=0.2)
