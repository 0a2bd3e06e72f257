"""Textual's Linux driver, measuring the terminal the way the rest of Textual does.

Textual sizes an app twice: its driver with `shutil.get_terminal_size()`, which asks
stdout only and falls back to 80x24, and `App.size` before the driver's first answer
with Rich's `Console.size`, which asks stdin, stdout then stderr. Those agree only while
stdout is the terminal. `hooktui.debug` moves file descriptor 1 aside while the app is
open (what C code prints must not land on it: loop/in_app.py), and a program may run
with its output redirected to a log (`python train.py > log`: the app opens on stdin
and stderr). Then the driver said 80x24 while Rich said the real size, and on a
terminal that is wide enough for the side-by-side layout (120x32 and up) Textual 8
resized its screen between the two for ever, drawing nothing and answering no key
(issue 29). This driver answers what Rich answers, so the two never disagree.
"""

from __future__ import annotations

import os

from textual.drivers.linux_driver import LinuxDriver

STANDARD_STREAMS = (0, 1, 2)  # Rich's order; the app reads keys from 0 and draws on 2


def terminal_size(environ=os.environ) -> tuple[int, int]:
    """(columns, lines) as Rich's Console.size reckons them: the first standard stream
    that is a terminal, then COLUMNS and LINES when set, 80x25 when nothing says."""
    width = height = 0
    for fd in STANDARD_STREAMS:
        try:
            width, height = os.get_terminal_size(fd)
        except (AttributeError, ValueError, OSError):
            continue
        break
    columns, lines = environ.get("COLUMNS"), environ.get("LINES")
    if columns is not None and columns.isdigit():
        width = int(columns)
    if lines is not None and lines.isdigit():
        height = int(lines)
    return width or 80, height or 25


class TerminalDriver(LinuxDriver):
    def _get_terminal_size(self) -> tuple[int, int]:
        return terminal_size()
