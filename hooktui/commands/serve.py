"""`hooktui serve MODEL.py`: the same app in a browser (textual-serve, the `web` extra).

Each browser tab that connects gets its own `hooktui open MODEL.py` (or `view TRACE.jsonl`)
process, run by textual-serve behind a websocket, at most --max-sessions at once. That app's
console runs Python, so whoever drives the page runs code as this user: nothing gets through
without the token made here and printed in the URL, the page's own Origin and a Host of
this server (hooktui/web/guard.py). It listens on 127.0.0.1 unless told otherwise; the way
in from another machine is an SSH tunnel (`ssh -L 8000:127.0.0.1:8000 gpu-box`), not an
open port.

The model (or trace) is loaded once here first, so that bad input is one message and exit
status 2 before anything listens, not a blank page later.
"""

from __future__ import annotations

import getpass
import ipaddress
import re
import shlex
import sys

from ..errors import UserError
from ..visible import visible
from .common import load
from .options import ServeOptions, is_trace

LOOPBACK_NAMES = ("localhost",)


SERVE_OPTIONS = ("--host", "--port", "--public-url", "--token-file", "--max-sessions")


def app_command(options: ServeOptions) -> list[str]:
    """The command textual-serve runs for each browser: this hooktui, with the command line
    it was given (every option of `open` or `view`), less serve's own options."""
    argv = list(options.argv or ["serve"] + ([options.target] if options.target else []))
    rest, skip = [], False
    for token in argv:
        if skip:
            skip = False
        elif token in SERVE_OPTIONS:
            skip = True  # and its value
        elif not token.startswith(tuple(f"{o}=" for o in SERVE_OPTIONS)):
            rest.append(token)
    rest.remove("serve")
    return [sys.executable, "-m", "hooktui", "view" if is_trace(options.target) else "open", *rest]


def check_public_url(text: str) -> None:
    """--public-url is checked before anything listens: one line and exit status 2 for a URL
    that is not plain `http(s)://HOST[:PORT][/PATH]` (yarl's own errors, a bracketed IPv6
    address left open or a port out of range, were a traceback; a control character would
    have been printed to the terminal in the URL line, and a query or fragment would swallow
    the `?token=` the URL line adds)."""
    from yarl import URL

    shown = visible(text)
    usage = "give the address the browser uses, e.g. http://127.0.0.1:9000"
    if shown != text or any(c.isspace() for c in text):
        raise UserError(f"--public-url {shown}: a URL has no spaces or control characters; {usage}")
    if not text.lower().startswith(("http://", "https://")):
        raise UserError(f"--public-url {shown}: {usage}")
    try:
        url = URL(text)
        host, port = url.host, url.port
    except (ValueError, TypeError) as exc:  # [::1 unclosed, a bad IPv6 address, port 99999
        raise UserError(f"--public-url {shown}: {visible(str(exc)) or 'not a URL'}; {usage}") from None
    if not host or port is None:
        raise UserError(f"--public-url {shown}: {usage}")
    if not _host_ok(url.raw_host or ""):
        raise UserError(f"--public-url {shown}: {visible(host)} is not a host name or IP address; {usage}")
    if url.user is not None or url.password is not None or url.query_string or url.fragment:
        raise UserError(f"--public-url {shown}: no user, query or fragment (the token is added as ?token=); {usage}")


def _host_ok(raw_host: str) -> bool:
    """A name (IDNA-encoded already: letters, digits, dots, hyphens) or an IP address; yarl
    takes `[::g]` and `a%00b` as hosts."""
    if ":" in raw_host:
        try:
            return ipaddress.ip_address(raw_host).version == 6
        except ValueError:
            return False
    return re.fullmatch(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.?", raw_host) is not None


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_input(options: ServeOptions) -> None:
    """Bad input fails here, with the same message `open` or `view` would give."""
    if options.against and not is_trace(options.target):
        raise UserError("--against compares two trace files: hooktui serve A.jsonl --against B.jsonl")
    if is_trace(options.target):
        from ..engine.records.trace_file import TraceFileError, read_trace_file

        for path in (options.target, options.against):
            if path:
                try:
                    read_trace_file(path)
                except TraceFileError as exc:
                    raise UserError(str(exc)) from exc
        return
    load(options.model)


def user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (some containers)
        return "this user"


def startup_lines(url: str) -> str:
    return (
        f"hooktui serve: {url}\n"
        f"This URL grants code execution as {user()} on this machine (the app's console runs Python): "
        "treat it like a password.\n"
        "Ctrl+C stops the server."
    )


def exposed_warning(host: str, port: int) -> str:
    return (
        f"hooktui: serving on {host}: anyone who can reach port {port} there and has the URL (its token) "
        f"can run code as {user()} on this machine, and plain HTTP carries the token in clear. "
        "An SSH tunnel to 127.0.0.1 is safer."
    )


def run_serve(options: ServeOptions) -> int:
    try:
        import textual_serve.server  # noqa: F401  (hooktui.web builds on it)
    except ImportError:
        raise UserError("serve needs textual-serve: pip install 'hooktui[web]'") from None
    from ..web.guard import Guard
    from ..web.server import GuardedServer
    from ..web.token_file import TokenFileError, check_token_file, remove_token_file, write_token_file

    if not 0 < options.port < 65536:
        raise UserError(f"--port {options.port}: a port is a number from 1 to 65535")
    if options.public_url:
        check_public_url(options.public_url)
    check_input(options)
    if options.token_file:
        try:
            check_token_file(options.token_file)
        except TokenFileError as exc:
            raise UserError(str(exc)) from exc
    if not is_loopback(options.host):
        print(exposed_warning(visible(options.host), options.port), file=sys.stderr)
    guard = Guard.make(options.host, options.public_url)
    base = (options.public_url or f"http://{f'[{options.host}]' if ':' in options.host else options.host}:{options.port}").rstrip("/")
    wrote_file = False

    def on_listening() -> None:
        nonlocal wrote_file
        if options.token_file:
            write_token_file(options.token_file, guard.token)
            wrote_file = True
        print(startup_lines(f"{base}/?token={guard.token}"), flush=True)

    label = options.target or "the Stack Overflow example"
    server = GuardedServer(
        shlex.join(app_command(options)), guard=guard, max_sessions=options.max_sessions, on_listening=on_listening,
        host=options.host, port=options.port, title=f"hooktui {label}", public_url=options.public_url,
    )
    try:
        server.serve()
    except TokenFileError as exc:
        raise UserError(str(exc)) from exc
    except OSError as exc:  # the port is taken, or the address is not this machine's
        raise UserError(f"cannot listen on {visible(options.host)}:{options.port}: {visible(str(exc.strerror or exc))} (choose another with --port)") from exc
    finally:
        if wrote_file:
            remove_token_file(options.token_file, guard.token)
    return 0
