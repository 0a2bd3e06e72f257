"""Pairs left behind: a process killed by a signal never removes its `<pid>.json` and
`<pid>.sock`; `hooktui.arm` prunes those of dead processes as it starts, and keeps the
pairs of live ones (attach/rendezvous.py prune_stale)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

from torch import nn

import hooktui
from hooktui.attach import rendezvous


def _dead_pid() -> int:
    """The pid of a process that has ended (and been waited for)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _pair(where, pid: int, *, listening: bool = False) -> socket.socket:
    """A `<pid>.json` and `<pid>.sock` as an armed process leaves them; the socket object
    (closed unless `listening`: then something still answers there)."""
    rendezvous.write_info(where, rendezvous.ArmedInfo(pid, rendezvous.new_token()))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(rendezvous.socket_path(pid, where)))
    if listening:
        sock.listen(1)
    else:
        sock.close()  # the file stays, nobody listens: as after SIGKILL
    return sock


def test_arm_prunes_the_pairs_of_dead_processes_and_keeps_live_ones():
    where = rendezvous.folder(create=True)
    dead = _dead_pid()
    _pair(where, dead)
    live = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    _pair(where, live.pid)
    # A dead pid whose socket still answers: the folder seen from another pid namespace.
    elsewhere = _dead_pid()
    answering = _pair(where, elsewhere, listening=True)
    other = where / "notes.json"  # not a pid's: never touched
    other.write_text(json.dumps({}))
    handle = hooktui.arm(nn.Linear(2, 2))
    try:
        assert handle.armed
        names = set(os.listdir(where))
        assert f"{dead}.json" not in names and f"{dead}.sock" not in names, names
        assert {f"{live.pid}.json", f"{live.pid}.sock"} <= names
        assert {f"{elsewhere}.json", f"{elsewhere}.sock"} <= names
        assert {f"{os.getpid()}.json", f"{os.getpid()}.sock", "notes.json"} <= names
        assert rendezvous.read_info(live.pid, where).pid == live.pid
    finally:
        handle.disarm()
        answering.close()
        live.stdin.close()
        live.wait(60)


def test_a_dead_pids_entry_of_another_kind_is_left():
    """Only regular files and sockets are removed: a folder named like a pair stays."""
    where = rendezvous.folder(create=True)
    dead = _dead_pid()
    (where / f"{dead}.json").mkdir()
    assert rendezvous.prune_stale(where) == []
    assert (where / f"{dead}.json").is_dir()
