"""Run `python -m hooktui ...` on a pseudo-terminal, as a user would: read every byte it
writes to the terminal, press keys, send signals, time how long it takes to end."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import re
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[2]

# What a well-behaved full-screen app leaves behind: alternate screen left, mouse
# reporting off, the cursor shown.
LEAVE_ALT_SCREEN = b"\x1b[?1049l"
MOUSE_OFF = b"\x1b[?1000l"


class Ended(NamedTuple):
    after: bytes  # what the terminal got from the ending on
    cooked: bool  # the terminal is back in the mode it had before the app
    elapsed: float  # seconds from the ending to the process's exit


class PtyApp:
    def __init__(
        self,
        *args: str,
        size: tuple[int, int] = (80, 24),
        cwd: Path | str = ROOT,
        env: dict | None = None,
        python: bool = False,
        stdout: Path | None = None,
    ) -> None:
        """`python -m hooktui ARGS`; with `python=True`, `python ARGS` (a script of the user's).
        `stdout`: a file the process's stdout goes to instead of the terminal (`> log`)."""
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
        self.slave_attrs = termios.tcgetattr(slave)  # cooked mode, before the app
        # COLUMNS and LINES stay out, as in a real terminal (shells do not export them): the
        # app must measure the terminal itself, whatever its stdout is (issue 29).
        environment = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON") and k not in ("COLUMNS", "LINES")}
        environment["TERM"] = "xterm-256color"
        environment.pop("NO_COLOR", None)
        environment.update(env or {})
        with contextlib.ExitStack() as files:
            out = slave if stdout is None else files.enter_context(open(stdout, "wb"))  # the child keeps its copy
            self.process = subprocess.Popen(
                [sys.executable, *([] if python else ["-m", "hooktui"]), *map(str, args)],
                stdin=slave,
                stdout=out,
                stderr=slave,  # Textual draws on stderr
                cwd=cwd,
                env=environment,
                start_new_session=True,
            )
        self.slave = slave
        self.output = bytearray()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            with self._lock:
                self.output += data

    def text(self) -> bytes:
        with self._lock:
            return bytes(self.output)

    def wait_for(self, pattern: bytes, timeout: float = 60.0) -> None:
        """Wait until the terminal output matches `pattern` (a regex over bytes)."""
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.text()):
            if self.process.poll() is not None:
                raise AssertionError(f"hooktui exited ({self.process.returncode}) before {pattern!r}: {self.text()[-400:]!r}")
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {pattern!r}; last output {self.text()[-400:]!r}")
            time.sleep(0.02)

    def resize(self, size: tuple[int, int]) -> None:
        """The terminal's window becomes `size` (columns, lines). The child has no
        controlling terminal (its own session), so SIGWINCH is sent as a terminal would."""
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
        os.killpg(self.process.pid, signal.SIGWINCH)

    def press(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def wait_exit(self, timeout: float) -> float:
        """Seconds until the process ended (raises if it does not within `timeout`)."""
        start = time.monotonic()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise AssertionError(f"hooktui did not exit within {timeout} s") from None
        elapsed = time.monotonic() - start
        self._read_to_the_end()
        return elapsed

    def _read_to_the_end(self) -> None:
        """Once the process is gone, the test's own copy of the terminal's far end is the last
        one open: its mode is kept for terminal_cooked and it is closed, so the reader gets
        all the process wrote and then EIO, and stops (a state, not a wait of so long)."""
        if self.slave is not None:
            try:
                self.final_attrs = termios.tcgetattr(self.slave)
            except termios.error:  # the test closed the terminal itself (a dropped connection)
                self.final_attrs = None
            os.close(self.slave)
            self.slave = None
        self._reader.join(60)  # a safety net: only a process left holding the terminal comes near it

    def end(self, how: Callable[[], object], within: float, settle: float = 0.3) -> Ended:
        """Let the screen settle `settle` s, then end the app with `how()` (a key, a signal)
        and wait up to `within` s for the process to exit."""
        time.sleep(settle)
        before = len(self.text())
        how()
        elapsed = self.wait_exit(within)
        return Ended(self.text()[before:], self.terminal_cooked(), elapsed)

    def terminal_cooked(self) -> bool:
        """The terminal is back in the mode it had before the app (echo, line editing)."""
        attrs = termios.tcgetattr(self.slave) if self.slave is not None else self.final_attrs
        lflag = attrs[3]
        return bool(lflag & termios.ICANON) and bool(lflag & termios.ECHO)

    def __enter__(self) -> PtyApp:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(5)
        # The whole session too: `hooktui run` and `hooktui MODEL.py` are a supervising
        # parent and a child, and a child left behind by a failed test would spin on.
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for fd in (self.master, self.slave):
            if fd is None:
                continue
            try:
                os.close(fd)
            except OSError:
                pass
