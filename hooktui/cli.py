"""Command line: `hooktui [MODEL]` opens the debugger, `hooktui trace MODEL` prints firings,
`hooktui view TRACE.jsonl` opens a saved trace with no model, `hooktui diff A B` compares two
saved runs, `hooktui serve MODEL` serves the app to a browser.

Bad input gets one clear message and exit status 2; `--traceback` shows the Python one.
"""

from __future__ import annotations

import argparse
import math
import sys
import traceback

from .errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, INTERRUPTED_MESSAGE, Interrupted, UserError

__all__ = ["EXIT_BAD_INPUT", "UserError", "main"]
# The diff's defaults (engine/analysis/compare.py's), here so that `--help` does not import it.
DEFAULT_RTOL, DEFAULT_ATOL = 1e-5, 1e-8
# Values kept per tensor: StatsOptions.max_values's default, and the most `--values` takes
# (a tensor's statistics are exact up to 2^20 elements: no more values than that).
DEFAULT_VALUES, MAX_VALUES = 1024, 1 << 20
DEFAULT_SESSIONS = 2  # serve: app processes at once
COMMANDS = ("open", "trace", "view", "diff", "serve")  # and `run`, which takes the script's own arguments


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hooktui",
        description="Step through every PyTorch hook firing of a model, forward then backward.",
        epilog="commands: `hooktui [open] MODEL` (the debugger, the default), `hooktui trace MODEL`, "
        "`hooktui view TRACE.jsonl [--against OTHER.jsonl]`, `hooktui diff A.jsonl B.jsonl [C.jsonl ...]`, "
        "`hooktui serve MODEL` (needs `pip install 'hooktui[web]'`), `hooktui run SCRIPT.py [ARGS...]` (your script, "
        "with hooktui.debug / hooktui.guard opening the app). MODEL is a .py file defining `model`/`build_model()` and "
        "`inputs`/`example_inputs()`, or package.module:attribute with --input-shape. "
        "Without MODEL, the built-in Stack Overflow example is used.",
    )
    parser.add_argument("command", nargs="?", choices=COMMANDS, default="open", help=argparse.SUPPRESS)
    parser.add_argument("target", nargs="?", metavar="MODEL", help="model file, package.module:attribute, or (view, diff) a trace file")
    parser.add_argument("other", nargs="*", metavar="B", help="diff: the other trace files (one per rank: hooktui diff hooktui-*-rank*.jsonl)")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default cpu)")
    parser.add_argument("--seed", type=int, default=0, help="seed for torch before the model is built (default 0)")
    parser.add_argument("--input-shape", type=_shape, metavar="N,N,...", help="one random (seeded) input of this shape")
    parser.add_argument("--json", action="store_true", help="trace: one JSON object per firing per line")
    parser.add_argument("--save", metavar="FILE", help="trace: also write a trace file that `hooktui view` opens")
    parser.add_argument("--values", type=_values, metavar="N",
                        help=f"trace: values kept per tensor for --json and --save (default {DEFAULT_VALUES}; 0: statistics only, "
                        "a far smaller and faster trace)")
    parser.add_argument(
        "--legacy",
        action="store_true",
        help="also record what the deprecated register_backward_hook would receive (legacy_backward firings)",
    )
    parser.add_argument("--rtol", type=float, help=f"diff: relative tolerance (default {DEFAULT_RTOL:g})")
    parser.add_argument("--atol", type=float, help=f"diff: absolute tolerance (default {DEFAULT_ATOL:g})")
    parser.add_argument("--against", metavar="B.jsonl", help="view: show this other run's numbers beside each tensor")
    parser.add_argument("--host", default="127.0.0.1", help="serve: address to listen on (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=8000, help="serve: port (default 8000)")
    parser.add_argument("--public-url", metavar="URL", help="serve: the address the browser uses, when not http://HOST:PORT")
    parser.add_argument("--token-file", metavar="PATH", help="serve: also write the token to PATH (mode 0600), for scripts")
    parser.add_argument("--max-sessions", type=_sessions, default=DEFAULT_SESSIONS, metavar="N",
                        help=f"serve: at most N app processes at once, one a browser tab (default {DEFAULT_SESSIONS})")
    value = parser.add_argument_group(
        "value breakpoints",
        "open: where `c` stops; trace: --stop-at-nonfinite / --stop-above print the firings up to the first "
        "hit, then where the bad value was born, and exit with status 3",
    )
    value.add_argument("--break-nonfinite", "--stop-at-nonfinite", dest="nonfinite", action="store_true",
                       help="stop at the first firing with a NaN, or a +/-Inf in a tensor that carries a gradient "
                            "(an attention mask passed in may hold -inf)")
    value.add_argument("--break-nonfinite-born", dest="nonfinite_born", action="store_true",
                       help="as --break-nonfinite, but c stops only where a NaN/Inf is born (made from finite values), "
                            "not at every later firing that carries it on")
    value.add_argument("--nan-only", action="store_true", help="with --break-nonfinite: NaN only, not Inf")
    value.add_argument("--break-above", "--stop-above", dest="above", metavar="STAT=BOUND", type=_above, action="append",
                       help="stop where a tensor's norm or absmax (over its finite values) is above BOUND, e.g. norm=1e3")
    value.add_argument("--break-if", dest="condition", metavar="EXPR",
                       help="open: stop where a Python expression is true (names: module, event, args, kwargs, output, "
                       "grad_output, grad_input, node, tensors, torch)")
    value.add_argument("--in", dest="bp_module", metavar="GLOB", default="*", help="value breakpoints: only these modules")
    value.add_argument("--phase", choices=("forward", "backward"), help="value breakpoints: only this phase")
    value.add_argument("--tensor", dest="bp_tensor", metavar="GLOB", default="*",
                       help="value breakpoints: only tensors with these names (e.g. 'grad_input*')")
    parser.add_argument("--traceback", action="store_true", help="show Python tracebacks for errors")
    parser.add_argument("--version", action="version", version=_version())
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        torch_version = version("torch")
    except PackageNotFoundError:
        torch_version = "not installed"
    from . import __version__

    return f"hooktui {__version__} (torch {torch_version}, Python {sys.version.split()[0]})"


def _shape(text: str) -> tuple[int, ...]:
    try:
        shape = tuple(int(part) for part in text.replace("x", ",").split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad shape {text!r}: use comma-separated sizes like 1,3,32,32") from None
    if not shape or any(n < 0 for n in shape):
        raise argparse.ArgumentTypeError(f"bad shape {text!r}: use comma-separated sizes like 1,3,32,32")
    return shape


def _values(text: str) -> int:
    try:
        count = int(text)
    except ValueError:
        count = -1
    if not 0 <= count <= MAX_VALUES:
        raise argparse.ArgumentTypeError(f"bad count {text!r}: use a whole number from 0 to {MAX_VALUES:,}")
    return count


def _sessions(text: str) -> int:
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"bad count {text!r}: use a whole number from 1 (one browser tab at a time)")
    return count


def _above(text: str) -> tuple[str, float]:
    stat, _, bound = text.partition("=")
    try:
        value = float(bound)
    except ValueError:
        value = float("nan")
    if stat.strip() not in ("norm", "absmax") or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"bad bound {text!r}: use norm=NUMBER or absmax=NUMBER, e.g. norm=1e3")
    return stat.strip(), value


def main(argv: list[str] | None = None) -> int:
    """The `hooktui` command (`argv` None: this process's own arguments). Only then may the
    process fork its terminal supervisor (hooktui/supervise.py): a caller that passes `argv`
    (a test, another program) keeps one process."""
    try:
        return _main(argv, supervised=argv is None)
    except (KeyboardInterrupt, Interrupted):
        # Ctrl+C anywhere (loading the model, tracing, saving): one line, not a traceback,
        # and never the model's error. A --save in progress leaves any previous file.
        try:
            print(INTERRUPTED_MESSAGE, file=sys.stderr, flush=True)
        except (OSError, ValueError):
            pass
        return EXIT_INTERRUPTED


def _main(argv: list[str] | None, supervised: bool) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "run":
        # Everything after the script is the script's: hooktui's options do not apply.
        from .commands.run import run_script

        return run_script(argv[1:], supervised=supervised)
    # `hooktui MODEL` is `hooktui open MODEL`: argparse cannot tell an optional
    # command from a positional model path on its own.
    if argv and argv[0] not in COMMANDS and not argv[0].startswith("-"):
        argv.insert(0, "open")
    parser = _parser()
    args = parser.parse_intermixed_args(argv)
    args.argv = argv  # as given (serve passes it on to the app it runs)
    if args.other and args.command != "diff":
        parser.error(f"unexpected argument {args.other[0]!r} (only diff takes several files)")
    if args.against is not None and args.command not in ("view", "serve"):
        parser.error("--against goes with view: hooktui view A.jsonl --against B.jsonl")
    if args.command in ("view", "diff"):
        given = [flag for flag, value in (("--break-if", args.condition), ("--break-nonfinite", args.nonfinite),
                                          ("--break-nonfinite-born", args.nonfinite_born),
                                          ("--break-above/--stop-above", args.above), ("--nan-only", args.nan_only)) if value]
        if given:
            parser.error(f"{', '.join(given)}: value breakpoints stop a running model (hooktui MODEL, hooktui trace MODEL); "
                         f"{args.command} reads a recorded run, where nothing runs to stop")
    if args.values is not None and args.command != "trace":
        parser.error("--values goes with trace: hooktui trace MODEL --json --values 0")
    if (args.rtol is not None or args.atol is not None) and not (args.command == "diff" or args.against):
        parser.error("--rtol and --atol go with diff and view --against: hooktui diff A.jsonl B.jsonl --rtol 1e-3")
    if args.json and args.command not in ("trace", "diff"):
        parser.error("--json goes with trace and diff: hooktui trace MODEL --json")
    if args.save and args.command != "trace":
        parser.error("--save goes with trace: hooktui trace MODEL --save FILE")
    if supervised and args.command in ("open", "view"):
        # The app takes the terminal: a parent process gives it back whatever ends the app.
        from .supervise import supervise

        supervise()
    try:
        if args.command == "trace":
            from .commands.trace import run_trace

            return run_trace(args)
        if args.command == "view":
            from .commands.view import run_view

            return run_view(args)
        if args.command == "diff":
            from .commands.diff import run_diff

            return run_diff(args)
        if args.command == "serve":
            from .commands.serve import run_serve

            return run_serve(args)
        from .commands.open import run_open

        return run_open(args)
    except UserError as exc:
        if args.traceback and exc.details:
            sys.stderr.write(exc.details)
        elif args.traceback:
            traceback.print_exception(exc.__cause__ or exc)
        print(f"hooktui: {exc}", file=sys.stderr)
        return exc.exit_status
