"""Command line: `hooktui [open] MODEL` opens the debugger, `hooktui trace MODEL` prints firings,
`hooktui view TRACE.jsonl` opens a saved trace with no model, `hooktui diff A B` compares two
saved runs, `hooktui serve MODEL` serves the app to a browser, `hooktui run SCRIPT.py` runs a
script with hooktui.debug / hooktui.guard opening the app.

One argparse subparser a command, each with only its own options; `parse` turns the command
line into that command's typed options (commands/options.py), and nothing below this module
sees argparse. Two conveniences are kept from the one flat parser this replaced: no command
means `open` (`hooktui MODEL.py`, `hooktui` alone), and hooktui's options may come before the
command (`hooktui --seed 3 trace m.py`). An option that belongs to another command is refused
with a line that names the command it goes with.

Bad input gets one clear message and exit status 2; `--traceback` shows the Python one.
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
import traceback
from dataclasses import dataclass

from .commands.options import (
    DEFAULT_ATOL, DEFAULT_RTOL, AttachOptions, BreakOptions, DiffOptions, ModelOptions, OpenOptions, RunOptions, ServeOptions, Tolerances,
    TraceOptions, ViewOptions, is_trace,
)
from .visible import visible, visible_block
from .errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, INTERRUPTED_MESSAGE, Interrupted, Terminated, UserError

__all__ = ["EXIT_BAD_INPUT", "Command", "UserError", "main", "parse"]
# Values kept per tensor: StatsOptions.max_values's default, and the most `--values` takes
# (a tensor's statistics are exact up to 2^20 elements: no more values than that).
DEFAULT_VALUES, MAX_VALUES = 1024, 1 << 20
DEFAULT_SESSIONS = 2  # serve: app processes at once
DEFAULT_DEVICE, DEFAULT_SEED = "cpu", 0
COMMANDS = ("open", "trace", "view", "diff", "serve", "run", "attach")
MODEL_HELP = ("MODEL is a .py file defining `model`/`build_model()` and `inputs`/`example_inputs()`, or "
              "package.module:attribute with --input-shape. Without MODEL, the built-in Stack Overflow example is used.")

Options = OpenOptions | TraceOptions | ViewOptions | DiffOptions | ServeOptions | RunOptions | AttachOptions


@dataclass(frozen=True)
class Command:
    """A parsed command line: the command's options, and whether errors show tracebacks."""

    options: Options
    traceback: bool = False


# ---- the parsers: one per command, built from shared groups of options


def _common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--traceback", action="store_true", help="show Python tracebacks for errors")
    common.add_argument("--version", action="version", version=_version())
    return common


def _model() -> argparse.ArgumentParser:
    model = argparse.ArgumentParser(add_help=False)
    group = model.add_argument_group("the model")
    group.add_argument("--device", help=f"cpu, cuda or cuda:N (default {DEFAULT_DEVICE})")
    group.add_argument("--seed", type=int, help=f"seed for torch before the model is built (default {DEFAULT_SEED})")
    group.add_argument("--input-shape", type=_shape, metavar="N,N,...", help="one random (seeded) input of this shape")
    group.add_argument("--legacy", action="store_true",
                       help="also record what the deprecated register_backward_hook would receive (legacy_backward firings)")
    return model


def _breaks(condition: bool) -> argparse.ArgumentParser:
    """Value breakpoints; `condition`: with --break-if (the app's, not trace's)."""
    breaks = argparse.ArgumentParser(add_help=False)
    value = breaks.add_argument_group(
        "value breakpoints",
        "the app: where `c` stops; trace: --stop-at-nonfinite / --stop-above print the firings up to the first "
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
    if condition:
        value.add_argument("--break-if", dest="condition", metavar="EXPR",
                           help="stop where a Python expression is true (names: module, event, args, kwargs, output, "
                           "grad_output, grad_input, node, tensors, torch)")
    value.add_argument("--in", dest="bp_module", metavar="GLOB", default="*", help="value breakpoints: only these modules")
    value.add_argument("--phase", choices=("forward", "backward"), help="value breakpoints: only this phase")
    value.add_argument("--tensor", dest="bp_tensor", metavar="GLOB", default="*",
                       help="value breakpoints: only tensors with these names (e.g. 'grad_input*')")
    return breaks


def _tolerances(what: str) -> argparse.ArgumentParser:
    tolerances = argparse.ArgumentParser(add_help=False)
    tolerances.add_argument("--rtol", type=float, help=f"{what}relative tolerance (default {DEFAULT_RTOL:g})")
    tolerances.add_argument("--atol", type=float, help=f"{what}absolute tolerance (default {DEFAULT_ATOL:g})")
    return tolerances


def _json(what: str) -> argparse.ArgumentParser:
    json = argparse.ArgumentParser(add_help=False)
    json.add_argument("--json", action="store_true", help=what)
    return json


class _Parser(argparse.ArgumentParser):
    """argparse, with the words it quotes from the command line (a file name may hold an
    escape sequence) made visible."""

    def error(self, message: str):
        super().error(visible(message))


def _parsers() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The top-level parser (its `--help` lists the commands) and each command's own
    (a subparser is of its parent's class)."""
    top = _Parser(
        prog="hooktui",
        description="Step through every PyTorch hook firing of a model, forward then backward.",
        epilog="Without a command, `hooktui [MODEL] [OPTIONS]` is `hooktui open`. `hooktui COMMAND --help` lists a "
        "command's options. " + MODEL_HELP,
    )
    top.add_argument("--traceback", action="store_true", help="show Python tracebacks for errors")
    top.add_argument("--version", action="version", version=_version())
    sub = top.add_subparsers(dest="command", title="commands", metavar="COMMAND")
    common, model = _common(), _model()
    target = dict(nargs="?", metavar="MODEL", help="model file or package.module:attribute (default: the built-in example)")
    parsers = {}

    open_ = sub.add_parser("open", parents=[model, _breaks(condition=True), common],
                           help="the debugger on MODEL (the default command)", description="The debugger on MODEL. " + MODEL_HELP)
    open_.add_argument("target", **target)
    parsers["open"] = open_

    trace = sub.add_parser(
        "trace", parents=[model, _breaks(condition=False), _json("one JSON object per firing per line"), common],
        help="run forward and backward without pausing; print every firing",
        description="Run MODEL forward and backward without pausing and print every firing. " + MODEL_HELP)
    trace.add_argument("target", **target)
    trace.add_argument("--save", metavar="FILE", help="also write a trace file that `hooktui view` opens")
    trace.add_argument("--values", type=_values, metavar="N",
                       help=f"values kept per tensor for --json and --save (default {DEFAULT_VALUES}; 0: statistics only, "
                       "a far smaller and faster trace)")
    parsers["trace"] = trace

    view = sub.add_parser("view", parents=[_tolerances("with --against: "), common],
                          help="the debugger on a saved trace, no model needed",
                          description="The debugger on a saved trace (or saved `trace --json` output), no model or torch run.")
    view.add_argument("target", nargs="?", metavar="TRACE.jsonl", help="the trace file")
    view.add_argument("--against", metavar="B.jsonl", help="show this other run's numbers beside each tensor")
    parsers["view"] = view

    diff = sub.add_parser("diff", parents=[_json("print one JSON object"), _tolerances(""), common],
                          help="where two saved runs part (or which rank parted first)",
                          description="Where saved runs part: exit status 0 when they agree, 1 when they differ, 2 on bad input.")
    diff.add_argument("target", nargs="?", metavar="A.jsonl", help="a trace file")
    diff.add_argument("other", nargs="*", metavar="B.jsonl",
                      help="the other trace files (one per rank: hooktui diff hooktui-*-rank*.jsonl)")
    parsers["diff"] = diff

    serve = sub.add_parser(
        "serve", parents=[model, _breaks(condition=True), _tolerances("with --against: "), common],
        help="the app in a browser (needs `pip install 'hooktui[web]'`)",
        description="The app in a browser: each tab gets its own `hooktui open MODEL` (or `view TRACE.jsonl`) "
        "with the options given here. " + MODEL_HELP)
    serve.add_argument("target", nargs="?", metavar="MODEL", help="model file, package.module:attribute, or a trace file")
    serve.add_argument("--against", metavar="B.jsonl", help="with a trace file: show this other run's numbers beside each tensor")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    serve.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    serve.add_argument("--public-url", metavar="URL", help="the address the browser uses, when not http://HOST:PORT")
    serve.add_argument("--token-file", metavar="PATH", help="also write the token to PATH (mode 0600), for scripts")
    serve.add_argument("--max-sessions", type=_sessions, default=DEFAULT_SESSIONS, metavar="N",
                       help=f"at most N app processes at once, one a browser tab (default {DEFAULT_SESSIONS})")
    parsers["serve"] = serve

    run = sub.add_parser("run", help="your script, with hooktui.debug / hooktui.guard opening the app",
                         description="Run a Python script with hooktui.debug / hooktui.guard active (like python -m pdb SCRIPT).")
    run.add_argument("--armed", action="store_true",
                     help="arm the first model the script calls, for `hooktui attach PID` (as hooktui.arm(model))")
    run.add_argument("script", metavar="SCRIPT.py", help="the script to run")
    run.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="the script's own arguments")
    parsers["run"] = run

    attach = sub.add_parser("attach", parents=[common], help="the debugger on the next step of a training already running",
                            description="Open the next step of a running process armed with hooktui.arm(model) (or "
                            "`hooktui run --armed`): forward and backward paused live. Quitting detaches; the training goes on.")
    attach.add_argument("target", metavar="PID", help="the training process (or, with --rank, its torchrun launcher)")
    attach.add_argument("--rank", type=int, metavar="R", help="under torchrun: the rank to open (the others record the same step)")
    attach.add_argument("--when", metavar="EXPR",
                        help="the first step whose loss makes EXPR true, e.g. 'loss > 10' (names: loss, step, model, torch); "
                        "it opens where its backward starts")
    attach.add_argument("--step", type=int, metavar="N", help="step N (hooktui.arm counts the steps from 0)")
    attach.add_argument("--break-nonfinite", dest="nonfinite", action="store_true",
                        help="the first step with a NaN/Inf, opened at that firing")
    attach.add_argument("--record", metavar="FILE", help="save the step to FILE without pausing (hooktui view FILE opens it)")
    parsers["attach"] = attach
    return top, parsers


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


# ---- from the command line to a command's options


def parse(argv: list[str]) -> Command:
    """The command `argv` asks for, with its typed options. Bad usage ends here, as argparse
    ends it: the usage, one line naming the problem, SystemExit(2)."""
    top, parsers = _parsers()
    if argv and argv[0] == "run":
        # Everything after the script is the script's: hooktui's options do not apply.
        run = parsers["run"].parse_args(argv[1:])
        return Command(RunOptions(run.script, tuple(run.args), armed=run.armed))
    known = {option for parser in parsers.values() for action in parser._actions for option in action.option_strings}
    valued = {option for parser in parsers.values() for action in parser._actions if action.nargs != 0
              for option in action.option_strings}
    position = _command_position(argv, known, valued)
    if position is None:  # options only (or nothing): the built-in example in the debugger
        if any(token in ("-h", "--help") for token in argv):
            top.parse_args(argv)  # hooktui's own help, listing the commands; exits
        name, rest = "open", argv
    elif argv[position] in COMMANDS:
        name, rest = argv[position], argv[:position] + argv[position + 1:]
    else:  # `hooktui MODEL` is `hooktui open MODEL`
        name, rest = "open", argv
    if name == "run":
        top.error("run goes first, and takes none of hooktui's options: hooktui run SCRIPT.py [ARGS...]")
    parser = parsers[name]
    args, extras = parser.parse_known_intermixed_args(rest)
    if extras:
        parser.error(_refusal(name, extras, known))
    return Command(_options(parser, name, args, tuple(argv)), traceback=args.traceback)


def _command_position(argv: list[str], known: set[str], valued: set[str]) -> int | None:
    """Where the first word that is not an option (nor an option's value) is: the command,
    or the model of `hooktui [OPTIONS] MODEL`."""
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "--":
            return None
        if not token.startswith("-") or token == "-":
            return i
        i += 2 if "=" not in token and _option_name(token, known) in valued else 1
    return None


def _option_name(token: str, known: set[str]) -> str | None:
    """The option a token names: exactly, or as an unambiguous prefix (argparse's abbreviations)."""
    name = token.partition("=")[0]
    if name in known or not name.startswith("--"):
        return name if name in known else None
    matches = {option for option in known if option.startswith(name)}
    return matches.pop() if len(matches) == 1 else None


BREAK_FLAGS = ("--break-if", "--break-nonfinite", "--stop-at-nonfinite", "--break-nonfinite-born", "--break-above",
               "--stop-above", "--nan-only", "--in", "--phase", "--tensor")
MODEL_FLAGS = ("--device", "--seed", "--input-shape", "--legacy")
SERVE_FLAGS = ("--host", "--port", "--public-url", "--token-file", "--max-sessions")
GOES_WITH = {
    "--save": "--save goes with trace: hooktui trace MODEL --save FILE",
    "--values": "--values goes with trace: hooktui trace MODEL --json --values 0",
    "--json": "--json goes with trace and diff: hooktui trace MODEL --json",
    "--rtol": "--rtol and --atol go with diff and view --against: hooktui diff A.jsonl B.jsonl --rtol 1e-3",
    "--atol": "--rtol and --atol go with diff and view --against: hooktui diff A.jsonl B.jsonl --rtol 1e-3",
    "--against": "--against goes with view: hooktui view A.jsonl --against B.jsonl",
    "--break-if": "--break-if is for the app (hooktui MODEL --break-if ...); trace takes --stop-at-nonfinite and --stop-above",
}


def _refusal(command: str, extras: list[str], known: set[str]) -> str:
    """Why the words left over after `command` took its own: an option of another command
    says which one it goes with; else argparse's words."""
    flags = [name for name in (_option_name(token, known) for token in extras if token.startswith("-")) if name]
    breaks = [flag for flag in flags if flag in BREAK_FLAGS]
    if breaks and command in ("view", "diff"):
        return (f"{', '.join(dict.fromkeys(breaks))}: value breakpoints stop a running model (hooktui MODEL, hooktui trace "
                f"MODEL); {command} reads a recorded run, where nothing runs to stop")
    for flag in flags:
        if flag in GOES_WITH:
            return GOES_WITH[flag]
        if flag in SERVE_FLAGS:
            return f"{flag} goes with serve: hooktui serve MODEL {flag} ..."
        if flag in MODEL_FLAGS:
            return f"{flag} goes with the commands that run a model (open, trace, serve); {command} reads a recorded run"
    if not any(token.startswith("-") for token in extras):
        return f"unexpected argument {extras[0]!r} (only diff takes several files)"
    return f"unrecognized arguments: {' '.join(extras)}"


def _model_options(args: argparse.Namespace) -> ModelOptions:
    return ModelOptions(
        target=args.target,
        device=DEFAULT_DEVICE if args.device is None else args.device,
        seed=DEFAULT_SEED if args.seed is None else args.seed,
        input_shape=args.input_shape,
    )


def _break_options(args: argparse.Namespace) -> BreakOptions:
    return BreakOptions(
        nonfinite=args.nonfinite, nonfinite_born=args.nonfinite_born, nan_only=args.nan_only, above=tuple(args.above or ()),
        condition=getattr(args, "condition", None), module=args.bp_module, phase=args.phase, tensor=args.bp_tensor,
    )


def _options(parser: argparse.ArgumentParser, command: str, args: argparse.Namespace, argv: tuple[str, ...]) -> Options:
    if command in ("view", "serve") and (args.rtol is not None or args.atol is not None) and not args.against:
        parser.error(GOES_WITH["--rtol"])
    if command == "open":
        return OpenOptions(_model_options(args), _break_options(args), legacy=args.legacy)
    if command == "trace":
        return TraceOptions(_model_options(args), _break_options(args), legacy=args.legacy, json=args.json, save=args.save,
                            values=args.values)
    if command == "attach":
        return AttachOptions(args.target, rank=args.rank, when=args.when, step=args.step, nonfinite=args.nonfinite,
                             record=args.record)
    if command == "view":
        return ViewOptions(args.target, against=args.against, tolerances=Tolerances(args.rtol, args.atol))
    if command == "diff":
        paths = (args.target, *args.other) if args.target else ()
        return DiffOptions(paths, json=args.json, tolerances=Tolerances(args.rtol, args.atol))
    if is_trace(args.target):  # each browser gets `view TRACE.jsonl`: no model runs
        breaks = _break_options(args)
        given = [flag for flag, value in (("--device", args.device), ("--seed", args.seed), ("--input-shape", args.input_shape),
                                          ("--legacy", args.legacy)) if value is not None and value is not False]
        if given or breaks != BreakOptions():
            parser.error(f"{', '.join(given) or 'value breakpoints'}: options of a model; serve {args.target} opens a "
                         "recorded run (hooktui view), where no model runs")
    return ServeOptions(
        _model_options(args), against=args.against, host=args.host, port=args.port, public_url=args.public_url,
        token_file=args.token_file, max_sessions=args.max_sessions, argv=argv,
    )


# ---- running it


def main(argv: list[str] | None = None) -> int:
    """The `hooktui` command (`argv` None: this process's own arguments). Only then may the
    process fork its terminal supervisor (hooktui/supervise.py): a caller that passes `argv`
    (a test, another program) keeps one process."""
    try:
        return _main(argv, supervised=argv is None)
    except Terminated as exc:  # SIGTERM, SIGHUP during trace (commands/end_requests.py)
        try:
            print(f"hooktui: ended by {signal.Signals(exc.signum).name}; any previous --save file is unchanged",
                  file=sys.stderr, flush=True)
        except (OSError, ValueError):
            pass
        return 128 + exc.signum
    except (KeyboardInterrupt, Interrupted):
        # Ctrl+C anywhere (loading the model, tracing, saving): one line, not a traceback,
        # and never the model's error. A --save in progress leaves any previous file.
        try:
            print(INTERRUPTED_MESSAGE, file=sys.stderr, flush=True)
        except (OSError, ValueError):
            pass
        return EXIT_INTERRUPTED


def _main(argv: list[str] | None, supervised: bool) -> int:
    from .commands.standard_streams import reopen_closed

    reopen_closed()  # before anything opens a file: see commands/standard_streams.py
    command = parse(list(sys.argv[1:] if argv is None else argv))
    options = command.options
    if isinstance(options, RunOptions):
        from .commands.run import run_script

        return run_script(options, supervised=supervised)
    if supervised and (isinstance(options, (OpenOptions, ViewOptions)) or isinstance(options, AttachOptions) and not options.record):
        # The app takes the terminal: a parent process gives it back whatever ends the app.
        from .supervise import supervise

        supervise()
    try:
        return _run(options)
    except UserError as exc:
        # A message names files and quotes the model's own words: made visible, never obeyed.
        try:
            if command.traceback:
                details = exc.details or "".join(traceback.format_exception(exc.__cause__ or exc))
                sys.stderr.write(visible_block(details))
            print(f"hooktui: {visible(str(exc))}", file=sys.stderr, flush=True)
        except (OSError, ValueError):  # stderr itself cannot be written: the status still says it
            pass
        return exc.exit_status


def _run(options: Options) -> int:
    if isinstance(options, AttachOptions):
        from .commands.attach import run_attach

        return run_attach(options)
    if isinstance(options, TraceOptions):
        from .commands.trace import run_trace

        return run_trace(options)
    if isinstance(options, ViewOptions):
        from .commands.view import run_view

        return run_view(options)
    if isinstance(options, DiffOptions):
        from .commands.diff import run_diff

        return run_diff(options)
    if isinstance(options, ServeOptions):
        from .commands.serve import run_serve

        return run_serve(options)
    from .commands.open import run_open

    return run_open(options)
