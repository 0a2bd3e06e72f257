"""A trace file written by an attacker: valid records whose every string carries terminal
escape sequences, bidi overrides or Textual/Rich markup. Opening it must show each of them
as plain, visible text and obey none.

Plain JSON, built by hand: no torch, and nothing from hooktui's writer is trusted to make it.
"""

from __future__ import annotations

import json
from pathlib import Path

TITLE = "\x1b]0;pwned-title\x07"  # sets the terminal's title
CLIPBOARD = "\x1b]52;c;aGVsbG8=\x07"  # writes the clipboard (OSC 52)
ALT_SCREEN = "\x1b[?1049l\x1b[2Jaltbreak"  # leaves the alternate screen, clears it
BIDI = "\u202etxt.exe"  # right-to-left override
CLOSING_TAG = "x[/]"  # crashed the values pane title when parsed as markup
CLICK = "[@click=app.quit]quitlink[/]"  # a live action when parsed as markup
BOLD = "[bold red]notbold[/]"

# Every payload as it must appear on screen.
SHOWN = {
    TITLE: "\\x1b]0;pwned-title\\x07",
    CLIPBOARD: "\\x1b]52;c;aGVsbG8=\\x07",
    ALT_SCREEN: "\\x1b[?1049l\\x1b[2Jaltbreak",
    BIDI: "\\u202etxt.exe",
    CLOSING_TAG: "x[/]",
    CLICK: "[@click=app.quit]quitlink[/]",
    BOLD: "[bold red]notbold[/]",
}
# Raw bytes that must never reach the terminal.
RAW = [TITLE.encode(), b"\x1b]52;", b"\x1b[2Jaltbreak", BIDI.encode()]

EVIL = TITLE + CLICK + CLIPBOARD + BOLD + ALT_SCREEN + BIDI + CLOSING_TAG


def _tensor(name: str, **extra) -> dict:
    return {
        "name": name,
        "shape": [2, 3],
        "dtype": "float32" + TITLE,
        "device": "cpu" + CLICK,
        "requires_grad": True,
        "grad_fn": "AddmmBackward0" + CLIPBOARD,
        "target": "args[0]" + BOLD,
        "stats": {"count": 6, "finite": 6, "min": 0.0, "max": 5.0, "mean": 2.5, "std": 1.8, "absmax": 5.0, "norm": 7.4,
                  "hist": [1, 1, 1, 1, 1, 1], "hist_range": [0.0, 5.0], "of": "values"},
        "values": [0.0, 1.0, 2.0, 3.0, "nan", "inf"],
        "values_shape": [2, 3],
        "note": "tensor note " + EVIL,
        **extra,
    }


def events(source_file: str) -> list[dict]:
    module, module_type = "fc" + EVIL, "Linear" + EVIL
    source = {"filename": source_file, "lineno": 3, "function": "forward" + EVIL, "line": "y = self.fc(x)" + EVIL}
    node = {"name": "AddmmBackward0" + EVIL, "seq_nr": 4, "saved": {"mat1" + EVIL: [2, 3], "alpha": "1" + EVIL},
            "next": [{"name": "AccumulateGrad" + TITLE, "next": [], "saved": {}, "truncated": False}, None], "truncated": True}
    base = {"module": module, "module_type": module_type, "call": 0, "source": source}
    return [
        {"index": 0, "phase": "forward", "hook": "forward_pre", "tensors": [_tensor(CLOSING_TAG)], "notes": ["note " + EVIL], **base},
        {"index": 1, "phase": "forward", "hook": "forward", "grad_fn": "AddmmBackward0" + EVIL, "node": node,
         "tensors": [_tensor("args[0]" + CLICK), _tensor("output" + TITLE, values=None, values_shape=None)], **base},
        {"index": 2, "phase": "backward", "hook": "backward", "grad_fn": "AddmmBackward0" + EVIL, "node": node, "forward_index": 1,
         "tensors": [_tensor("grad_input[0]" + ALT_SCREEN), {"name": "grad_input[1]" + BIDI, "shape": None, "missing": "missing " + EVIL}],
         "notes": ["fired early " + EVIL], **base},
        {"index": 3, "phase": "backward", "hook": "error", "tensors": [], "notes": ["RuntimeError" + EVIL],
         "error": {"type": "RuntimeError" + EVIL, "message": "boom " + EVIL + "\nsecond line",
                   "traceback": "Traceback (most recent call last):\n  File \"m.py\", line 3, in forward\n    " + EVIL + "\nRuntimeError: boom"},
         **base},
    ]


def write(path: Path, source_file: str = "model_evil.py") -> Path:
    info = {
        "model": "evil" + EVIL + ".py",
        "modules": [{"name": "", "type": "Net" + EVIL, "params": {}}, {"name": "fc" + EVIL, "type": "Linear" + EVIL, "params": {"weight" + TITLE: [1, 3]}}],
        "loss": "loss " + EVIL,
        "device": "cpu",
        "torch_version": "2.13" + TITLE,
    }
    lines = {str(n): f"line {n} " + (EVIL if n == 3 else "") for n in range(1, 8)}
    header = {"format": "hooktui-trace", "version": 1, "info": info, "sources": {source_file: lines}}
    with open(path, "w", encoding="utf-8") as out:
        out.write(json.dumps(header) + "\n")
        for event in events(source_file):
            out.write(json.dumps(event) + "\n")
    return path
