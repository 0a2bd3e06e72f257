"""`hooktui serve MODEL.py`: the same app in a browser (textual-serve, the `web` extra).

Each browser tab that connects gets its own `hooktui open MODEL.py` (or `view TRACE.jsonl`)
process, run by textual-serve behind a websocket. It listens on 127.0.0.1 unless told
otherwise: whoever reaches the port can run the model, so the way in from another machine
is an SSH tunnel (`ssh -L 8000:127.0.0.1:8000 gpu-box`), not an open port.

The model (or trace) is loaded once here first, so that bad input is one message and exit
status 2 before anything listens, not a blank page later.
"""

from __future__ import annotations

import ipaddress
import shlex
import sys

from ..cli import UserError
from .common import load

LOOPBACK_NAMES = ("localhost",)


SERVE_OPTIONS = ("--host", "--port", "--public-url")


def app_command(args) -> list[str]:
    """The command textual-serve runs for each browser: this hooktui, with the command line
    it was given (every option of `open` or `view`), less serve's own options."""
    argv = list(getattr(args, "argv", None) or ["serve"] + ([args.target] if args.target else []))
    rest, skip = [], False
    for token in argv:
        if skip:
            skip = False
        elif token in SERVE_OPTIONS:
            skip = True  # and its value
        elif not token.startswith(tuple(f"{o}=" for o in SERVE_OPTIONS)):
            rest.append(token)
    rest.remove("serve")
    return [sys.executable, "-m", "hooktui", "view" if is_trace(args.target) else "open", *rest]


def is_trace(target: str | None) -> bool:
    return bool(target) and target.endswith((".jsonl", ".json"))


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_input(args) -> None:
    """Bad input fails here, with the same message `open` or `view` would give."""
    if getattr(args, "against", None) and not is_trace(args.target):
        raise UserError("--against compares two trace files: hooktui serve A.jsonl --against B.jsonl")
    if is_trace(args.target):
        from ..engine.trace_file import TraceFileError, read_trace_file

        for path in (args.target, args.against):
            if path:
                try:
                    read_trace_file(path)
                except TraceFileError as exc:
                    raise UserError(str(exc)) from exc
        return
    load(args)


def run_serve(args) -> int:
    try:
        from textual_serve.server import Server
    except ImportError:
        raise UserError("serve needs textual-serve: pip install 'hooktui[web]'") from None
    if not 0 < args.port < 65536:
        raise UserError(f"--port {args.port}: a port is a number from 1 to 65535")
    check_input(args)
    if not is_loopback(args.host):
        print(
            f"hooktui: serving on {args.host}: anyone who can reach port {args.port} there can run this model. "
            "An SSH tunnel to 127.0.0.1 is safer.",
            file=sys.stderr,
        )
    label = args.target or "the Stack Overflow example"
    server = Server(shlex.join(app_command(args)), host=args.host, port=args.port, title=f"hooktui {label}", public_url=args.public_url)
    try:
        server.serve()
    except OSError as exc:  # the port is taken, or the address is not this machine's
        raise UserError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc} (choose another with --port)") from exc
    return 0
