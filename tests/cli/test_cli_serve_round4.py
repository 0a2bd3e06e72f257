"""`hooktui serve`, issue 35 item 6: the token reaches the server's output once (the URL
line), even when a client sends a malformed request line carrying it (aiohttp's error log
quoted the line, with a traceback); no control character a client sent reaches the
terminal; the app processes end when the server is SIGKILLed; a malformed --public-url is
one line and exit status 2."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import time
from pathlib import Path

import pytest

from cli_run import SAMPLES
from processes import processes
from served import Served, browser, read_until

CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@pytest.fixture(scope="module")
def served():
    server = Served(SAMPLES / "seed.py", "--max-sessions", "1")
    try:
        yield server
    finally:
        server.stop()  # the last test SIGKILLed it already: its status, at once


def _send_raw(port: int, line: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(line + b"\r\nHost: 127.0.0.1\r\n\r\n")
        return connection.recv(4096)


def test_serve_a_malformed_request_is_one_log_line_without_the_token(served):
    token = served.token.encode()
    malformed = [
        b"G\x1b[2JT /?token=" + token + b" HTTP/1.1",  # a control character in the method
        b"GET /?token=" + token + b"\x1b]0;owned\x07 HTTP/1.1",  # in the query
        b"GET /?token=" + token + b" HTTP/1.1 junk",  # aiohttp: bad status line
        b"GET /?token=" + token + b" HTTP/9.9",  # the same reason: the last one logged
    ]
    for line in malformed:
        assert _send_raw(served.port, line).startswith(b"HTTP/1.0 400")
    deadline = time.monotonic() + 30  # one event loop logs them in order: the last one is enough
    while served.output.count("Bad status line") < 2:
        assert time.monotonic() < deadline, served.output
        time.sleep(0.05)
    output = served.output
    assert output.count(served.token) == 1, output  # the URL line only
    assert "Traceback" not in output and "Error handling request" not in output, output
    assert not CONTROL.findall(output.replace("\n", "")), output
    logged = " ".join(output.split())  # Rich wraps log lines at the console's width
    assert logged.count("refused a malformed request from 127.0.0.1 (400") >= 3, output


def _descendants(pid: int) -> set[int]:
    """Every living process below `pid` (children, theirs, ...), from /proc."""
    parents = {p.pid: p.parent for p in processes() if p.state != "Z"}
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the app processes in /proc")
def test_serve_sigkilled_takes_its_app_processes_with_it(served):
    async def open_a_session() -> None:
        async with browser() as session:
            async with session.get(served.url) as response:
                page = await response.text()
            ws_url = re.search(r'data-session-websocket-url="([^"]+)"', page).group(1)
            async with session.ws_connect(f"{ws_url}?width=100&height=30", headers={"Origin": served.base}) as ws:
                await read_until(ws, b"paused")  # the app is up, its model paused at firing 0
                apps.update(_descendants(served.process.pid))
                served.process.send_signal(signal.SIGKILL)
                served.process.wait(30)

    apps: set[int] = set()
    asyncio.run(open_a_session())
    assert apps, "no app process was running"
    deadline = time.monotonic() + 60  # a safety net: they end within moments
    while left := [pid for pid in apps if _alive(pid)]:
        if time.monotonic() > deadline:
            for pid in left:
                os.kill(pid, signal.SIGKILL)
            raise AssertionError(f"app processes {left} outlived their SIGKILLed server")
        time.sleep(0.1)


@pytest.mark.parametrize(
    "url, said",
    [
        ("http://[::1", "Invalid IPv6 URL"),
        ("http://[::g]:9000", "--public-url http://[::g]:9000:"),
        ("http://gpu\x1b]0;owned\x07box:9000", "--public-url http://gpu\\x1b]0;owned\\x07box:9000: a URL has no spaces or control characters"),
        ("http://box:99999", "--public-url http://box:99999:"),
        ("http://box:9000/?a=b", "no user, query or fragment"),
        ("http://box :9000", "a URL has no spaces"),
    ],
)
def test_serve_a_malformed_public_url_is_one_line_and_exit_2(capsys, url, said):
    from hooktui.cli import main

    assert main(["serve", str(SAMPLES / "seed.py"), "--public-url", url]) == 2
    captured = capsys.readouterr()
    err = captured.err
    assert said in err and "Traceback" not in err, err
    assert err.count("\n") == 1 and err.startswith("hooktui: --public-url "), err
    assert not CONTROL.findall(err.rstrip("\n") + captured.out), err
