"""The terminal is always given back: a small parent process watches the one that runs the app.

Textual restores the terminal when the app ends in any way Python sees (q, a crash, the
signals the app handles). It cannot when the process ends without Python: `os._exit()` or a
segfault in the model's forward, SIGKILL, a signal whose default action kills the process.
The terminal would stay in the alternate screen, in raw mode, with mouse reporting on and
the cursor hidden.

So `hooktui [open]`, `view` and `run` (the command itself, not `cli.main([...])` called by
a test or another program), when they have a terminal, fork first thing (before
torch is imported: the parent stays a few MB of plain Python). The child does the work, as
before. The parent saved the terminal's mode (termios); it waits for the child and, when the
child ended while the app held the terminal (the child says when it takes and gives back the
terminal, over a pipe), puts the mode back and writes the sequences that leave the alternate
screen, stop mouse reporting and show the cursor. Its exit status is the child's (128 + N
after signal N), with one line saying what ended it.

Signals sent to the parent (the pid a shell or a test knows: SIGTERM, SIGHUP, SIGINT,
SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM) are passed on to the child; those the terminal sends to
the whole foreground group reach the child already and are not sent twice. A request to end
that the app has not answered KILL_AFTER seconds later (one C call holds the GIL: no Python
runs, not even a signal handler) is followed by SIGKILL of the child, and the terminal is
restored here. SIGKILL of the parent itself cannot be caught by anyone: the child then keeps
running until it ends.

No torch, no Textual: this module is imported before either.
"""

from __future__ import annotations

import os
import signal
import sys
import time

# What leaves a full-screen app's terminal state: the alternate screen (1049), mouse
# reporting (1000, 1002, 1003, and the SGR / urxvt encodings 1006, 1015), focus events
# (1004), bracketed paste (2004), the kitty keyboard protocol (pop), and shows the cursor.
RESTORE = (
    b"\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1015l\x1b[?1004l\x1b[?2004l"
    b"\x1b[<u\x1b[?1049l\x1b[?25h"
)
FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM)
TAKEN, GIVEN_BACK = b"T", b"G"
# Requests to end: after one of these, an app that still holds the terminal KILL_AFTER
# seconds later is killed (see _watch).
ENDING = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT)
KILL_AFTER = 3.0

_report_fd: int | None = None  # in the child: where it says it took or gave back the terminal


def app_takes_terminal() -> None:
    """The app is about to switch the terminal to raw mode and the alternate screen."""
    _report(TAKEN)


def app_gave_back_terminal() -> None:
    """The app ended and Textual restored the terminal."""
    _report(GIVEN_BACK)


def _report(mark: bytes) -> None:
    if _report_fd is not None:
        try:
            os.write(_report_fd, mark)
        except OSError:
            pass


def supervise() -> None:
    """Fork when this process has a terminal: returns in the child, which goes on with the
    command; the parent never returns (it exits with the child's status)."""
    global _report_fd
    if os.environ.get("HOOKTUI_NO_SUPERVISOR") or _report_fd is not None or not hasattr(os, "fork"):
        return
    try:
        if not (os.isatty(0) and os.isatty(2)):
            return
        import termios

        saved = termios.tcgetattr(0)
    except (OSError, ImportError, Exception):  # termios.error: no terminal mode to save
        return
    read_end, write_end = os.pipe()
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {*FORWARDED, signal.SIGCHLD})
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        child = os.fork()
    except OSError:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        os.close(read_end)
        os.close(write_end)
        return
    if child == 0:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        os.close(read_end)
        _report_fd = write_end
        return
    os.close(write_end)
    os._exit(_watch(child, read_end, saved))


def _watch(child: int, reports: int, saved) -> int:
    """The parent: pass signals on, wait for the child, restore what it left.

    A termination request (SIGTERM, SIGHUP, SIGINT, SIGQUIT) that finds the app holding the
    terminal is followed by SIGKILL of the child when it has not ended KILL_AFTER seconds
    later: Python runs no signal handler while one C call holds the GIL (the app is then
    frozen too), and the terminal is restored here either way."""
    os.set_blocking(reports, False)
    held = False
    status = None
    deadline = None
    requested = killed = None  # the ending signal asked for; the one that had to follow it
    watched = {*FORWARDED, signal.SIGCHLD}
    while status is None:
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        info = signal.sigwaitinfo(watched) if timeout is None else signal.sigtimedwait(watched, timeout)
        held = _read_marks(reports, held)
        if info is None:  # the deadline passed
            deadline = None
            if held:
                _kill(child, signal.SIGKILL)
                killed = requested
            continue
        if info.si_signo == signal.SIGCHLD:
            done, raw = os.waitpid(child, os.WNOHANG)
            if done:
                status = raw
            continue
        if info.si_signo in ENDING and held and deadline is None:
            deadline = time.monotonic() + KILL_AFTER
            requested = info.si_signo
        if info.si_pid == 0 and info.si_signo in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP):
            continue  # from the terminal, to the whole foreground group: the child has it
        _kill(child, info.si_signo)
    held = _read_marks(reports, held)
    restored = _restore(saved) if held else False
    if killed is not None and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
        name = signal.Signals(killed).name
        _say(f"hooktui: the app did not end within {KILL_AFTER:g} s of {name} (a C call holding Python's GIL?): "
             f"killed" + ("; the terminal was restored" if restored else ""))
        return 128 + killed
    return _exit_status(status, held, restored)


def _kill(child: int, signum: int) -> None:
    try:
        os.kill(child, signum)
    except ProcessLookupError:
        pass


def _read_marks(reports: int, held: bool) -> bool:
    """Whether the app holds the terminal, after the child's latest reports."""
    try:
        while True:
            marks = os.read(reports, 4096)
            if not marks:
                return held
            held = marks[-1:] == TAKEN
    except (BlockingIOError, OSError):
        return held


def _restore(saved) -> bool:
    import termios

    ok = True
    try:
        termios.tcsetattr(0, termios.TCSAFLUSH, saved)
    except (OSError, termios.error):
        ok = False
    try:
        os.write(2, RESTORE)
    except OSError:
        ok = False
    return ok


def _exit_status(status: int, held: bool, restored: bool) -> int:
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        _say(f"hooktui: ended by {name}" + ("; the terminal was restored" if held and restored else ""))
        return 128 + signum
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1
    if held:
        _say(f"hooktui: the process ended with the app open (exit status {code}); the terminal was restored")
    return code


def _say(line: str) -> None:
    try:
        os.write(2, (line + "\n").encode())
    except OSError:
        pass
