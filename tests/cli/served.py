"""A real `hooktui serve` on 127.0.0.1 for the tests, and what a browser does to it: the
server process (its output read as it comes, its app processes counted from /proc), and
aiohttp clients for the page and its websocket."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import aiohttp  # with textual-serve, the web extra that `make install` installs

from cli_run import ROOT
from processes import processes

URL_LINE = re.compile(r"hooktui serve: (http://\S+/\?token=([A-Za-z0-9_-]+))")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Served:
    """`python -m hooktui serve ARGS --port P`, until `stop()`."""

    def __init__(self, *args: str, timeout: float = 60) -> None:
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        env["PYTHONUNBUFFERED"] = "1"  # every line as it is written: the log test reads them all
        self.process = subprocess.Popen(
            [sys.executable, "-m", "hooktui", "serve", *map(str, args), "--port", str(self.port)],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            text=True, start_new_session=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + timeout
        while not (match := URL_LINE.search(self.output)):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"serve printed no URL:\n{self.output}")
            time.sleep(0.05)
        self.url, self.token = match.group(1), match.group(2)
        self.base = f"http://127.0.0.1:{self.port}"

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def apps(self) -> list[int]:
        """The server's child processes (the apps it started), zombies left out."""
        return [p.pid for p in processes() if p.parent == self.process.pid and p.state != "Z"]

    def wait_apps(self, count: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while len(self.apps()) != count:
            assert time.monotonic() < deadline, f"{len(self.apps())} app processes, not {count}"
            time.sleep(0.05)

    def stop(self) -> int:
        """SIGTERM; the whole process group is killed if it does not end in 60 s (a safety net)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            raise AssertionError("the server did not stop on SIGTERM") from None
        finally:
            self._reader.join(timeout=30)
        return code


def browser() -> aiohttp.ClientSession:
    """A client that keeps cookies for 127.0.0.1 as a browser does (aiohttp's default jar
    drops cookies set by IP addresses)."""
    return aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))


async def refused(session: aiohttp.ClientSession, url: str, **kwargs) -> int:
    """The status a websocket handshake was refused with (0: it was not refused)."""
    try:
        async with session.ws_connect(url, **kwargs) as ws:
            await ws.close()
            return 0
    except aiohttp.WSServerHandshakeError as error:
        return error.status


async def read_until(ws: aiohttp.ClientWebSocketResponse, expected: bytes, timeout: float = 60) -> bytes:
    """The terminal bytes the app sends, until `expected` is among them."""
    seen = b""
    deadline = time.monotonic() + timeout
    while expected not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"{expected!r} never came; the screen so far ends {seen[-400:]!r}"
        message = await ws.receive(timeout=left)
        if message.type == aiohttp.WSMsgType.BINARY:
            seen += message.data
        elif message.type != aiohttp.WSMsgType.TEXT:
            raise AssertionError(f"the websocket ended ({message.type}) before {expected!r}: {seen[-400:]!r}")
    return seen
