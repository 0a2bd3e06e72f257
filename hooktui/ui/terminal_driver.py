"""Textual's Linux driver, on a terminal of its own that the model cannot take or break.

**Its own copies of the terminal.** Textual reads keys from file descriptor 0 and draws on
2, the same descriptors the user's model has. A model that closed 1 and 2 (a library
silencing output, a daemonising helper) took the app's screen: Textual's writer thread
died on EBADF, the screen froze, and the app's exit wrote nothing, leaving the terminal in
the alternate screen with mouse reporting on. A model that read stdin (`input()`, pdb)
took the app's keys: `q` went to the model's read until a blind Enter. So the driver
draws and reads on private duplicates of 2 and 0 (made as the app starts, closed when it
ends), and while the app holds the terminal, descriptor 0 is /dev/null: what reads it
below Python (C code, a child process) gets end-of-file, never a key (Python's own
`sys.stdin` is handled in ui/model_stdin.py, which says so on the screen). Descriptors 1
and 2 closed by the model are given the terminal back when the app ends, so that what
hooktui says afterwards (the model's output, the exit line) is seen.

**Measuring.** Textual sizes an app twice: its driver with `shutil.get_terminal_size()`,
which asks stdout only and falls back to 80x24, and `App.size` before the driver's first
answer with Rich's `Console.size`, which asks stdin, stdout then stderr. Those agree only
while stdout is the terminal. `hooktui.debug` moves file descriptor 1 aside while the app
is open (what C code prints must not land on it: loop/in_app.py), and a program may run
with its output redirected to a log (`python train.py > log`: the app opens on stdin and
stderr). Then the driver said 80x24 while Rich said the real size, and on a terminal that
is wide enough for the side-by-side layout (120x32 and up) Textual 8 resized its screen
between the two for ever, drawing nothing and answering no key (issue 29). This driver
answers what Rich answers (its own descriptors are the same terminal as 0 and 2 were).

**SIGSTOP, then SIGCONT** (a job stopped and resumed without SIGTSTP, which the driver
would have handled): Textual's SIGCONT handler starts application mode a second time,
reading the terminal's mode again to restore at exit, but that mode is the app's own raw
one, so `q` left the terminal raw (and a second key thread read the keys). Here SIGCONT
while the app holds the terminal puts the app's terminal mode and screen back (a shell may
have reset them while the job was stopped) and redraws, keeping the mode from before the
app for the exit.

**The terminal gone without a SIGHUP** (its far end closed; the supervising parent killed,
or no controlling terminal to send one): a thread watches the driver's copy of the terminal
for a hangup and sends the process the SIGHUP the terminal did not, which ends the app as
one does. Without it Textual's key thread read end-of-file in a loop for ever.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import sys
import termios
import threading
import tty

from textual.drivers.linux_driver import LinuxDriver

STANDARD_STREAMS = (0, 1, 2)  # Rich's order; the app reads keys from 0 and draws on 2


def terminal_size(environ=os.environ, first: tuple[int, ...] = ()) -> tuple[int, int]:
    """(columns, lines) as Rich's Console.size reckons them: the first standard stream
    that is a terminal (after the descriptors in `first`), then COLUMNS and LINES when set,
    80x25 when nothing says."""
    width = height = 0
    for fd in (*first, *STANDARD_STREAMS):
        try:
            width, height = os.get_terminal_size(fd)
        except (AttributeError, ValueError, OSError):
            continue
        break
    columns, lines = environ.get("COLUMNS"), environ.get("LINES")
    if columns is not None and _readable(columns):
        width = int(columns)
    if lines is not None and _readable(lines):
        height = int(lines)
    return width or 80, height or 25


def _readable(value: str) -> bool:
    return value.isascii() and value.isdigit()


def drop_unreadable_size(environ=os.environ) -> list[str]:
    """Remove COLUMNS and LINES when they are not a number in ASCII digits; returns their
    names. Rich reads them with `isdigit()` then `int()`, so `COLUMNS=²` (a digit to
    `isdigit`, not to `int`) made every Console, the app's included, raise ValueError. A
    value nothing can read is no size: without it the terminal's own size is used."""
    dropped = [name for name in ("COLUMNS", "LINES") if name in environ and not _readable(environ[name])]
    for name in dropped:
        del environ[name]
    return dropped


def _dup(fd: int) -> int | None:
    try:
        return os.dup(fd)  # not inherited by the model's child processes
    except OSError:
        return None


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


class TerminalDriver(LinuxDriver):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._own_in: int | None = None  # the private copies of 0 and 2 (None: not made)
        self._own_out: int | None = None
        self._holding = False  # fd 0 on /dev/null
        self._application = False  # application mode started and not stopped since
        self._loop: asyncio.AbstractEventLoop | None = None

    def _get_terminal_size(self) -> tuple[int, int]:
        return terminal_size(first=tuple(fd for fd in (self._own_in, self._own_out) if fd is not None))

    # -- a terminal of its own -----------------------------------------------------------
    def _take_terminal(self) -> None:
        if self._own_in is None:
            self._own_in = _dup(self.fileno)
            if self._own_in is not None:
                self.fileno = self._own_in
        if self._own_out is None:
            stderr = sys.__stderr__
            self._own_out = _dup(stderr.fileno()) if stderr is not None else None
            if self._own_out is not None:
                self._file = open(  # noqa: SIM115 (closed in close())
                    self._own_out, "w", encoding=getattr(stderr, "encoding", None) or "utf-8", errors="replace", closefd=False
                )

    def _hold_stdin(self) -> None:
        """Descriptor 0 on /dev/null while the app holds the terminal (its keys are read from
        the private copy)."""
        if self._own_in is None or self._holding:
            return
        try:
            null = os.open(os.devnull, os.O_RDONLY)
        except OSError:
            return
        try:
            os.dup2(null, 0)
            self._holding = True
        except OSError:
            pass
        finally:
            os.close(null)

    def _release_stdin(self) -> None:
        if self._holding and self._own_in is not None:
            with contextlib.suppress(OSError):
                os.dup2(self._own_in, 0)
        self._holding = False

    def _give_back_closed_streams(self) -> None:
        """1 and 2, if the model closed them, on the terminal again."""
        if self._own_out is None:
            return
        for fd in (1, 2):
            if not _is_open(fd):
                with contextlib.suppress(OSError):
                    os.dup2(self._own_out, fd)

    # -- application mode ----------------------------------------------------------------
    def start_application_mode(self) -> None:
        self._take_terminal()
        self._loop = asyncio.get_running_loop()
        writer = self._writer_thread
        super().start_application_mode()
        if self._writer_thread is not writer:  # it started (not put back to sleep by SIGTTOU)
            self._application = True
            self._hold_stdin()
            if self._own_in is not None:
                threading.Thread(target=self._watch_for_hangup, args=(self._own_in,), daemon=True,
                                 name="hooktui hangup watch").start()

    def _watch_for_hangup(self, fd: int) -> None:
        """The terminal gone with no SIGHUP to say so (its far end closed while the
        supervising parent was killed, or the app's session has no controlling terminal):
        Textual's key thread then reads end-of-file in a loop, for ever, at 40% of a core,
        holding the model and its memory. The app is told as a SIGHUP would tell it."""
        poller = select.poll()
        poller.register(fd, 0)  # no events asked for: only hangup, error and a closed fd come
        while self._application:
            try:
                events = poller.poll(500)
            except (OSError, InterruptedError):
                continue
            if not events or events[0][1] & select.POLLNVAL:
                if events:  # the descriptor was closed: the app has ended
                    return
                continue
            if self._application:
                os.kill(os.getpid(), signal.SIGHUP)
            return

    def write(self, data: str) -> None:
        """Through Textual's writer thread while it runs. Once it has stopped (an app unwound
        by a signal in the middle of its own exit, ui/ending.py, restores the terminal after
        Textual closed the driver), straight to the terminal: queued to a stopped thread the
        sequences that leave the alternate screen were lost, and the 31st write blocked for ever."""
        writer = self._writer_thread
        if writer is not None and writer.is_alive():
            super().write(data)
            return
        with contextlib.suppress(OSError, ValueError, AttributeError):
            self._file.write(data)
            self._file.flush()

    def stop_application_mode(self) -> None:
        self._application = False
        try:
            super().stop_application_mode()
        finally:
            self._release_stdin()

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._give_back_closed_streams()
            file, self._file = self._file, sys.__stderr__
            if file is not sys.__stderr__:
                with contextlib.suppress(OSError, ValueError):
                    file.close()
            for fd in (self._own_in, self._own_out):
                if fd is not None:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            if self._own_in is not None:
                self.fileno = 0
            self._own_in = self._own_out = None

    # -- a job stopped and resumed ---------------------------------------------------------
    def _sigcont_application(self, *_) -> None:
        if not self._application:  # suspended through SIGTSTP (or not started): Textual's resume
            super()._sigcont_application()
            return
        # Still in application mode: the terminal's mode and screen back, the mode from
        # before the app (attrs_before) kept for the exit.
        if self.attrs_before is not None:
            mode = list(self.attrs_before)
            mode[tty.LFLAG] = self._patch_lflag(mode[tty.LFLAG])
            mode[tty.IFLAG] = self._patch_iflag(mode[tty.IFLAG])
            mode[tty.CC] = list(mode[tty.CC])
            mode[tty.CC][termios.VMIN] = 1
            with contextlib.suppress(termios.error, OSError):
                termios.tcsetattr(self.fileno, termios.TCSANOW, mode)
        if self._writer_thread is not None and self._writer_thread.is_alive():
            self.write("\x1b[?1049h")  # the alternate screen
            self._enable_mouse_support()
            self.write("\x1b[?25l\x1b[?1004h")  # the cursor hidden, focus events
            self.flush()
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._redraw)

    def _redraw(self) -> None:
        """Every line again: the job's shell may have written on the screen meanwhile (a
        screen refreshed whole is drawn whole)."""
        try:
            self._app.screen.refresh()
        except Exception:  # no screen (the app is ending)
            pass
