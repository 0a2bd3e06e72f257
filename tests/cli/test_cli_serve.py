"""`hooktui serve MODEL.py`: a real server on 127.0.0.1 (serving the seed model, at most one
session) and real HTTP and websocket clients. Only the printed URL's token, from the page's
own Origin and at one of the server's own Host names, gets the app; everything else is a
403 and starts no process (issue 21's attack: a foreign page's websocket typing into the
console). At most --max-sessions apps run at once. The token is in no log line."""

from __future__ import annotations

import asyncio
import base64
import os
import re
import socket
import stat

import aiohttp
import pytest

from hooktui.commands.options import ModelOptions, ServeOptions
from hooktui.commands.serve import app_command, exposed_warning, is_loopback, startup_lines
from hooktui.web.guard import Guard, hostname
from hooktui.web.token_file import TokenFileError, write_token_file

from cli_run import SAMPLES
from served import Served, browser, read_until, refused


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    token_file = tmp_path_factory.mktemp("serve") / "token"
    server = Served(SAMPLES / "seed.py", "--max-sessions", "1", "--token-file", token_file)
    server.token_file = token_file
    try:
        yield server
    finally:
        assert server.stop() == 0
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", server.port)) != 0  # it stopped listening
        assert not token_file.exists()  # removed at exit


def test_serve_prints_a_token_url_and_writes_the_token_file_0600(served):
    assert served.url == f"http://127.0.0.1:{served.port}/?token={served.token}"
    assert len(base64.urlsafe_b64decode(served.token + "=" * (-len(served.token) % 4))) >= 16  # 128 bits or more
    assert "grants code execution as" in served.output and "treat it like a password" in served.output
    assert stat.S_IMODE(os.stat(served.token_file).st_mode) == 0o600
    assert served.token_file.read_text() == served.token + "\n"


def test_serve_the_token_url_works_end_to_end_and_a_key_changes_the_screen(served):
    served.wait_apps(0)

    async def drive() -> tuple[str, bytes, bytes]:
        async with browser() as session:
            async with session.get(served.url) as response:  # the printed URL, as a browser opens it
                assert response.status == 200
                page = await response.text()
                cookie = response.headers["Set-Cookie"]
                # No script reads it, no other site's request carries it; the URL goes to no other site.
                assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
                assert response.headers["Referrer-Policy"] == "no-referrer"
            ws_url = re.search(r'data-session-websocket-url="([^"]+)"', page).group(1)
            # No ?token= on the websocket: the page's cookie carries it, as in a browser.
            async with session.ws_connect(f"{ws_url}?width=100&height=30", headers={"Origin": served.base}) as ws:
                first = await read_until(ws, b"paused")
                await ws.send_str('["stdin", ":"]')  # the console: the user's own debugger, behind the token
                await read_until(ws, b"Python expression")
                await ws.send_str('["stdin", "\'ab\' * 3\\r"]')
                evaluated = await read_until(ws, b"ababab")
                await ws.send_str('["stdin", "\\u001b"]')
                await ws.send_str('["stdin", "q"]')
            return page, first, evaluated

    page, first, evaluated = asyncio.run(drive())
    assert "seed.py" in page and f"ws://127.0.0.1:{served.port}/ws" in page
    assert b"fc1" in first and b"fc2" in first  # the seed model's modules, paused at its first firing
    assert b"ababab" in evaluated
    served.wait_apps(0)


@pytest.mark.parametrize("wrong", ["none", "another", "one character off", "a prefix"])
def test_serve_without_the_right_token_is_403_and_starts_nothing(served, wrong):
    served.wait_apps(0)
    last = "A" if served.token[-1] != "A" else "B"
    token = {"none": None, "another": "x" * len(served.token), "one character off": served.token[:-1] + last, "a prefix": served.token[:-1]}[wrong]
    query = "" if token is None else f"?token={token}"

    async def attempts() -> list[int]:
        async with browser() as session:
            statuses = []
            for path in ("/", "/static/js/textual.js", "/download/x"):
                async with session.get(f"{served.base}{path}{query}") as response:
                    statuses.append(response.status)
                    assert served.token not in await response.text()
            statuses.append(await refused(session, f"{served.base}/ws{query}", headers={"Origin": served.base}))
            return statuses

    assert asyncio.run(attempts()) == [403, 403, 403, 403]
    assert served.apps() == []


def test_serve_refuses_a_foreign_origin_even_with_the_token(served):
    """Issue 21's attack: a page at evil.example opens the websocket (the browser would even
    carry the cookie to a page on another local port) and would type into the console."""
    served.wait_apps(0)
    pwned = served.token_file.parent / "PWNED.txt"

    async def attempt(session: aiohttp.ClientSession, headers: dict) -> int:
        try:
            async with session.ws_connect(f"{served.base}/ws?token={served.token}", headers=headers) as ws:
                # Let in: do what the attacker does (so that this test fails the way the attack works).
                await read_until(ws, b"paused")
                await ws.send_str('["stdin", ":"]')
                await read_until(ws, b"Python expression")
                await ws.send_str(f'["stdin", "__import__(\'os\').system(\'id > {pwned}\')\\r"]')
                for _ in range(100):
                    if pwned.exists():
                        break
                    await asyncio.sleep(0.1)
                return 0
        except aiohttp.WSServerHandshakeError as error:
            return error.status

    async def attack() -> list[int]:
        async with browser() as session:
            async with session.get(served.url) as response:  # the victim opened the page once: cookie set
                assert response.status == 200
            statuses = []
            for origin in ("http://evil.example.com", f"http://127.0.0.1:{served.port + 1}", "null", None):
                statuses.append(await attempt(session, {} if origin is None else {"Origin": origin}))
                if pwned.exists():
                    break
            async with session.get(served.url, headers={"Origin": "http://evil.example.com"}) as response:
                statuses.append(response.status)
            return statuses

    statuses = asyncio.run(attack())
    assert not pwned.exists()
    assert statuses == [403] * 5 and served.apps() == []


def test_serve_refuses_a_foreign_host_even_with_the_token(served):
    """DNS rebinding: attacker.example resolves to 127.0.0.1, and its page's requests say so in Host."""
    served.wait_apps(0)

    async def rebound() -> list[int]:
        async with aiohttp.ClientSession() as session:
            host = {"Host": f"attacker.example:{served.port}"}
            async with session.get(served.url, headers=host) as response:
                page_status = response.status
            ws_status = await refused(
                session, f"{served.base}/ws?token={served.token}", headers={**host, "Origin": f"http://attacker.example:{served.port}"}
            )
            return [page_status, ws_status]

    assert asyncio.run(rebound()) == [403, 403]
    assert served.apps() == []


def test_serve_runs_at_most_max_sessions_apps(served):
    served.wait_apps(0)

    async def two_tabs() -> bytes:
        async with browser() as session:
            origin = {"Origin": served.base}
            async with session.ws_connect(f"{served.base}/ws?token={served.token}", headers=origin) as first:
                served.wait_apps(1)
                async with session.ws_connect(f"{served.base}/ws?token={served.token}", headers=origin) as second:
                    message = await read_until(second, b"reload this page", timeout=60)
                    assert len(served.apps()) == 1  # the second tab got the message, and no process
                await first.send_str('["stdin", "q"]')
        return message

    message = asyncio.run(two_tabs())
    assert b"1 session is open already" in message and b"--max-sessions 1" in message
    served.wait_apps(0)


def test_serve_logs_the_token_nowhere_but_the_printed_url(served):
    async def requests() -> None:
        async with browser() as session:
            for url in (served.url, f"{served.base}/?token=wrong", f"{served.base}/static/js/textual.js?token={served.token}"):
                async with session.get(url) as response:
                    await response.read()

    asyncio.run(requests())
    assert served.output.count(served.token) == 1, served.output  # the URL line only: no access log
    assert served.output.count("?token=") == 1


def test_the_guard_knows_its_hosts_and_origins():
    guard = Guard.make("127.0.0.1", "https://gpu.example.org:8443/")
    assert guard.host_ok("127.0.0.1:8000") and guard.host_ok("localhost:9000") and guard.host_ok("[::1]:8000")
    assert guard.host_ok("gpu.example.org:8443") and guard.host_ok("LOCALHOST.")
    assert not guard.host_ok("attacker.example:8000") and not guard.host_ok("10.0.0.5:8000") and not guard.host_ok("")
    assert guard.origin_ok("http://127.0.0.1:8000", "127.0.0.1:8000", "http")
    assert guard.origin_ok("https://gpu.example.org:8443", "127.0.0.1:8000", "http")
    assert not guard.origin_ok("http://127.0.0.1:8001", "127.0.0.1:8000", "http")
    assert not guard.origin_ok(None, "127.0.0.1:8000", "http")
    anywhere = Guard.make("0.0.0.0")  # every address of the machine; a name still needs --public-url
    assert anywhere.host_ok("10.0.0.5:8000") and not anywhere.host_ok("gpu-box:8000")
    assert hostname("[::1]:8000") == "::1" and hostname("Example.org:80") == "example.org"
    assert guard.token_ok([guard.token]) and not guard.token_ok(["", "x", guard.token + "x", "é"])
    assert Guard.make("127.0.0.1").cookie != Guard.make("127.0.0.1").cookie  # two servers, two cookies


def test_the_token_file_refuses_a_symlink_and_tightens_an_existing_file(tmp_path):
    target = tmp_path / "elsewhere"
    target.write_text("")
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(TokenFileError, match="symlink"):
        write_token_file(str(link), "secret")
    assert target.read_text() == ""
    loose = tmp_path / "loose"
    loose.write_text("old and longer than the token\n")
    loose.chmod(0o644)
    write_token_file(str(loose), "secret")
    assert loose.read_text() == "secret\n" and stat.S_IMODE(loose.stat().st_mode) == 0o600
    with pytest.raises(TokenFileError, match="Is a directory"):
        write_token_file(str(tmp_path), "secret")
    with pytest.raises(TokenFileError, match="not a regular file"):
        write_token_file("/dev/null", "secret")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(TokenFileError, match="cannot write it"):  # at once: nobody reads a FIFO here
        write_token_file(str(fifo), "secret")


def test_serve_runs_the_app_with_the_same_options_and_listens_on_loopback():
    argv = ["--seed", "3", "serve", "m.py", "--port", "9000", "--break-nonfinite", "--host=127.0.0.1", "--in", "fc*",
            "--token-file", "t", "--max-sessions=3"]
    args = ServeOptions(ModelOptions("m.py"), argv=tuple(argv))
    assert app_command(args)[1:] == ["-m", "hooktui", "open", "--seed", "3", "m.py", "--break-nonfinite", "--in", "fc*"]
    args = ServeOptions(ModelOptions("a.jsonl"), argv=("serve", "a.jsonl", "--against", "b.jsonl", "--public-url", "http://x:1"))
    assert app_command(args)[3:] == ["view", "a.jsonl", "--against", "b.jsonl"]
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.org")


def test_serve_says_the_url_grants_code_execution():
    assert "grants code execution as" in startup_lines("http://h/?token=t")
    warning = exposed_warning("0.0.0.0", 8000)
    assert "can run code as" in warning and "port 8000" in warning and "SSH tunnel" in warning


def test_serve_bad_input_is_exit_2_before_listening(capsys, tmp_path):
    from hooktui.cli import main

    assert main(["serve", str(SAMPLES / "missing.py")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["serve", str(SAMPLES / "seed.py"), "--port", "70000"]) == 2
    assert "--port 70000" in capsys.readouterr().err
    assert main(["serve", str(SAMPLES / "seed.py"), "--against", "b.jsonl"]) == 2
    assert "--against compares two trace files" in capsys.readouterr().err
    assert main(["serve", str(SAMPLES / "seed.py"), "--public-url", "127.0.0.1:9000"]) == 2
    assert "--public-url 127.0.0.1:9000: give the address" in capsys.readouterr().err
    unwritable = str(tmp_path / "no such folder" / "token")
    assert main(["serve", str(SAMPLES / "seed.py"), "--token-file", unwritable]) == 2
    assert f"--token-file {unwritable}: no such folder" in capsys.readouterr().err
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    assert main(["serve", str(SAMPLES / "seed.py"), "--token-file", str(tmp_path / "link")]) == 2
    assert "is a symlink" in capsys.readouterr().err
    for bad in ("0", "x"):
        with pytest.raises(SystemExit) as exited:
            main(["serve", str(SAMPLES / "seed.py"), "--max-sessions", bad])
        assert exited.value.code == 2
        assert f"--max-sessions: bad count '{bad}'" in capsys.readouterr().err
