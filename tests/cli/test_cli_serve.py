"""`hooktui serve MODEL.py`: a real server on 127.0.0.1 serves the page, and a browser's
websocket gets the running app (its module tree on screen); then it stops on SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from argparse import Namespace

import aiohttp  # with textual-serve, the web extra that `make install` installs

from hooktui.commands.serve import app_command, is_loopback

from cli_run import ROOT, SAMPLES


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_listening(port: int, process: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[0]
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError("the server never listened")


async def app_screen(port: int, expected: bytes, timeout: float = 60) -> bytes:
    """What the app draws for a browser at 80x24, until `expected` is on it; then quits it."""
    seen = b""
    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(f"http://127.0.0.1:{port}/ws?width=80&height=24") as ws:
            deadline = time.monotonic() + timeout
            while expected not in seen and time.monotonic() < deadline:
                message = await ws.receive(timeout=deadline - time.monotonic())
                if message.type == aiohttp.WSMsgType.BINARY:
                    seen += message.data
                elif message.type != aiohttp.WSMsgType.TEXT:
                    break
            await ws.send_str('["stdin", "q"]')
    return seen


def test_serve_serves_the_app_on_localhost():
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    process = subprocess.Popen(
        [sys.executable, "-m", "hooktui", "serve", str(SAMPLES / "seed.py"), "--port", str(port)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        wait_listening(port, process)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as response:
            assert response.status == 200
            page = response.read().decode()
        assert "seed.py" in page and f"ws://127.0.0.1:{port}/ws" in page
        # The page's websocket runs hooktui itself: the seed model's modules are drawn, and
        # the model pauses at its first firing.
        screen = asyncio.run(app_screen(port, b"paused"))
        assert b"fc1" in screen and b"fc2" in screen and b"paused" in screen
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise AssertionError("the server did not stop on SIGTERM") from None
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0  # it stopped listening


def test_serve_runs_the_app_with_the_same_options_and_listens_on_loopback():
    argv = ["--seed", "3", "serve", "m.py", "--port", "9000", "--break-nonfinite", "--host=127.0.0.1", "--in", "fc*"]
    args = Namespace(target="m.py", argv=argv)
    assert app_command(args)[1:] == ["-m", "hooktui", "open", "--seed", "3", "m.py", "--break-nonfinite", "--in", "fc*"]
    args = Namespace(target="a.jsonl", argv=["serve", "a.jsonl", "--against", "b.jsonl", "--public-url", "http://x:1"])
    assert app_command(args)[3:] == ["view", "a.jsonl", "--against", "b.jsonl"]
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.org")


def test_serve_bad_input_is_exit_2_before_listening(capsys):
    from hooktui.cli import main

    assert main(["serve", str(SAMPLES / "missing.py")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["serve", str(SAMPLES / "seed.py"), "--port", "70000"]) == 2
    assert "--port 70000" in capsys.readouterr().err
    assert main(["serve", str(SAMPLES / "seed.py"), "--against", "b.jsonl"]) == 2
    assert "--against compares two trace files" in capsys.readouterr().err
