"""Who may attach: only this user (SO_PEERCRED), only with the process's token; bad input is
one line and exit status 2; an attacher that dies mid-step leaves the training to go on."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time

import pytest
import torch
from torch import nn

import hooktui
from hooktui import cli
from hooktui.attach import rendezvous, wire
from hooktui.attach.client import AttachError, Connection
from test_attach import TIMEOUT, finished, pid_of, same_training, start


@pytest.fixture
def armed():
    model = nn.Sequential(nn.Linear(2, 2))
    handle = hooktui.arm(model)
    assert handle.armed
    yield handle
    handle.disarm()


def raw_hello(path, token: str):
    """Connect and say hello as an attacher would; the process's first reply."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(TIMEOUT)
    sock.connect(str(path))
    try:
        wire.send(sock, wire.message_line(wire.Hello(token=token)))
    except BrokenPipeError:  # refused before hello: the reply waits in the socket
        pass
    line = wire.LineReader(sock, wire.OPENED_LIMIT).read()
    sock.close()
    return wire.decode_reply(line, "test")


def test_the_folder_socket_and_token_file_are_this_users_alone(armed):
    folder = armed.socket_path.parent
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(armed.socket_path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(rendezvous.info_path(os.getpid(), folder)).st_mode) == 0o600
    armed.disarm()
    assert not armed.socket_path.exists() and not rendezvous.info_path(os.getpid(), folder).exists()


def test_a_wrong_token_is_refused(armed):
    path = rendezvous.info_path(os.getpid())
    info = json.loads(path.read_text())
    right = info["token"]
    assert isinstance(raw_hello(armed.socket_path, right), wire.Welcome)  # the right one is let in
    info["token"] = ("0" if right[0] != "0" else "1") + right[1:]
    path.write_text(json.dumps(info))
    with pytest.raises(AttachError, match="refused: wrong token"):
        Connection(os.getpid())


def test_another_users_process_is_refused_before_its_token_is_read(armed, monkeypatch):
    token = rendezvous.read_info(os.getpid()).token
    # The process's own uid is now another than the peer's (this test's, the same process's):
    # its SO_PEERCRED check must refuse the right token.
    uid = os.getuid()
    monkeypatch.setattr(rendezvous, "own_uid", lambda: uid + 1)
    reply = raw_hello(armed.socket_path, token)
    assert isinstance(reply, wire.Refused) and "another user" in reply.why


def test_a_hostile_line_is_refused_without_harm(armed):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(TIMEOUT)
    sock.connect(str(armed.socket_path))
    wire.send(sock, b"M" + b'{"op":"hello","token":"' + b"x" * 5000 + b'"}\n')
    reply = wire.decode_reply(wire.LineReader(sock, wire.OPENED_LIMIT).read(), "test")
    sock.close()
    assert isinstance(reply, wire.Refused) and "wrong token" in reply.why
    assert raw_hello(armed.socket_path, rendezvous.read_info(os.getpid()).token).pid == os.getpid()  # still listening


@pytest.mark.parametrize("pid, says", [
    ("abc", "'abc' is not a process id"),
    ("999999999", "no process with pid 999999999"),
    ("self", "is not armed"),
])
def test_bad_input_is_one_line_and_status_2(pid, says, capsys):
    if pid == "self":
        pid = str(os.getpid())
    assert cli.main(["attach", pid, "--record", "out.jsonl"]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1 and "Traceback" not in err


ATTACHER = """
import sys, time
from hooktui.attach import wire
from hooktui.attach.client import Connection
from hooktui.commands.attach import open_step
connection = Connection(int(sys.argv[1]))
open_step(connection, wire.Open(), on_waiting=lambda: open(sys.argv[2], "w").close())
while True:
    message = connection.read()
    if isinstance(message, wire.State) and message.state == "paused":
        print("paused", flush=True)
        time.sleep(600)
"""


def test_killing_the_attacher_mid_step_lets_the_training_finish(tmp_path):
    twin = start(tmp_path / "twin", "--no-arm")
    training = start(tmp_path / "armed")
    pid = pid_of(tmp_path / "armed", training)
    attacher = subprocess.Popen([sys.executable, "-c", ATTACHER, str(pid), str(tmp_path / "armed" / "go")],
                                stdout=subprocess.PIPE, text=True)
    try:
        assert attacher.stdout.readline().strip() == "paused"  # the training waits, paused in the step
        assert training.poll() is None
        attacher.send_signal(signal.SIGKILL)
        attacher.wait(TIMEOUT)
        finished(training)
    finally:
        if attacher.poll() is None:
            attacher.kill()
        if training.poll() is None:
            training.kill()
    finished(twin)
    same_training(tmp_path / "armed", tmp_path / "twin")


def test_another_users_process_is_one_line(monkeypatch, capsys):
    uid = os.getuid()
    monkeypatch.setattr(rendezvous, "process_owner", lambda pid: uid + 1)  # as /proc says of another user's process
    assert cli.main(["attach", str(os.getpid()), "--record", "out.jsonl"]) == 2
    err = capsys.readouterr().err
    assert "belongs to another user" in err and err.count("\n") == 1
