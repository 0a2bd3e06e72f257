"""`hooktui run SCRIPT.py [ARGS...]`: run your training script as `python SCRIPT.py ARGS`
would (as `__main__`, with its folder importable and `sys.argv` set), with the terminal
handed to the app only when a `hooktui.debug` call (or a `hooktui.guard` that stops) opens
it, like `python -m pdb script.py`.

What it adds to a plain run: a `hooktui.guard` without `on_error` opens the app at the first
NaN/Inf instead of only raising (where a terminal is attached); quitting the app ends the
script with status 0 and one line instead of hooktui.Quit's status 1; what the script
writes to stdout while the app is open (also from C code) is shown after the app, never on
top of it. The script's own exception is shown as Python shows it (exit status 1).
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback

from ..errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, INTERRUPTED_MESSAGE
from ..loop import where
from ..loop.errors import GuardError, Quit
from .options import RunOptions


def run_script(options: RunOptions, supervised: bool = False) -> int:
    """`supervised`: fork the terminal supervisor first (hooktui/supervise.py); only the
    `hooktui` command itself does, never a caller in its own process (a test)."""
    script = options.script
    if os.path.isdir(script):
        print(f"hooktui: run: {script}: is a folder; give the Python script to run", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not os.path.isfile(script):
        print(f"hooktui: run: {script}: no such file", file=sys.stderr)
        return EXIT_BAD_INPUT
    if supervised:  # the app may take the terminal: a parent process gives it back whatever ends it
        from ..supervise import supervise

        supervise()
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [script, *options.args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    where.under_hooktui_run = True
    if options.armed:
        from ..loop.arm import arm_first_model

        arm_first_model()
    try:
        runpy.run_path(script, run_name="__main__")
    except Quit as quit:
        print(f"hooktui: quit in the debugger at {quit.where or script}; the script stopped there", file=sys.stderr)
        return 0
    except SystemExit as exc:  # the script's own sys.exit()
        return _exit_code(exc)
    except KeyboardInterrupt:  # Ctrl+C (SIGINT), in the script or in the app: one line
        print(f"{INTERRUPTED_MESSAGE}; {script} stopped", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BaseException:
        _print_script_traceback(script)
        return 1
    finally:
        where.under_hooktui_run = False
        sys.argv, sys.path[:] = saved_argv, saved_path
    return 0


def _exit_code(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _print_script_traceback(script: str) -> None:
    """The traceback as `python SCRIPT.py` prints it: from the script's own frame on
    (hooktui's and runpy's frames before it are left out)."""
    kind, exc, tb = sys.exc_info()
    target = os.path.abspath(script)
    start = tb
    while start is not None and os.path.abspath(start.tb_frame.f_code.co_filename) != target:
        start = start.tb_next
    if not isinstance(exc, GuardError):
        traceback.print_exception(kind, exc, start or tb)
        return
    # A guard's error is raised from a hook, deep in torch's module call and hooktui's
    # tracer: those frames say nothing about the script. Its own frames, then the message.
    frames = traceback.extract_tb(start or tb)
    own = [f for f in frames if not _is_internal(f.filename)]
    sys.stderr.write("Traceback (most recent call last):\n" + "".join(traceback.format_list(own)))
    if len(own) < len(frames):
        sys.stderr.write(f"  ({len(frames) - len(own)} frames of torch and hooktui left out)\n")
    sys.stderr.write("".join(traceback.format_exception_only(kind, exc)))


def _is_internal(filename: str) -> bool:
    import torch

    path = os.path.abspath(filename)
    roots = (os.path.dirname(os.path.abspath(torch.__file__)), os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return any(path == root or path.startswith(root + os.sep) for root in roots)
