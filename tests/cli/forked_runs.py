"""Run many `python -m hooktui ...` command lines for one test module, paying for Python and
torch's start once: this process imports them, then forks a child a command line (two at a
time), and each child runs `hooktui/__main__.py` as `python -m hooktui` would, its stdin on
/dev/null and its stdout and stderr in files of its own.

What a child shares with a fresh interpreter: its own process (nothing a command does reaches
the next), the exit status, the bytes written to fds 1 and 2, `sys.path[0]` the working
directory, the environment. What it does not: torch and hooktui.cli are imported before the
command line is read, and stdout is a file rather than a pipe. Only for commands that do not
depend on either (cli_run.start_many(..., forked=True)); a test of what a command imports, of
the interpreter's start or of a pipe keeps its own `python -m hooktui`.

Usage: forked_runs.py COMMANDS.json RESULTS.json TIMEOUT_S. COMMANDS.json is a list of argv
lists; RESULTS.json gets, in the same order, {"returncode", "stdout", "stderr", "timed_out"}.
"""

from __future__ import annotations

import atexit
import json
import os
import runpy
import signal
import sys
import tempfile
import time
import traceback

import torch  # noqa: F401  (paid for once, here)

import hooktui.cli  # noqa: F401

AT_ONCE = 2


def _exit_status(code: object) -> int:
    """What the interpreter makes of SystemExit(code)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _child(argv: list[str], out: int, err: int) -> None:
    """In the forked child: run the command line as `python -m hooktui`, never return."""
    status = 1
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.argv = ["hooktui", *argv]
        sys.path[0] = os.getcwd()  # what `python -m` puts first
        try:
            runpy.run_module("hooktui", run_name="__main__", alter_sys=True)
            status = 0
        except SystemExit as exc:
            status = _exit_status(exc.code)
        except BaseException:  # as the interpreter would: the traceback, status 1
            traceback.print_exc()
            status = 1
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
    finally:
        os._exit(status)


def main(commands_path: str, results_path: str, timeout: float) -> None:
    with open(commands_path) as file:
        commands = json.load(file)
    results: list[dict | None] = [None] * len(commands)
    running: dict[int, tuple[int, float, object, object]] = {}  # pid -> (index, start, out, err)
    waiting = list(range(len(commands)))
    while waiting or running:
        while waiting and len(running) < AT_ONCE:
            index = waiting.pop(0)
            out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _child(commands[index], out.fileno(), err.fileno())
            running[pid] = (index, time.monotonic(), out, err)
        pid, wait_status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            for pid, (index, start, _, _) in running.items():
                if time.monotonic() - start > timeout:
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)
            continue
        index, start, out, err = running.pop(pid)
        texts = []
        for file in (out, err):
            file.seek(0)
            texts.append(file.read().decode("utf-8", errors="replace"))
            file.close()
        results[index] = {"returncode": os.waitstatus_to_exitcode(wait_status), "stdout": texts[0], "stderr": texts[1],
                          "timed_out": time.monotonic() - start > timeout}
    with open(results_path, "w") as file:
        json.dump(results, file)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]))
