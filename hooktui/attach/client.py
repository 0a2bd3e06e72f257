"""The attacher's side: find an armed process, prove who we are, then read its messages.

Every way this can go wrong is one line (AttachError): no such process, another user's,
not armed, a stale socket of a process that ended, refused, no answer.
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path

from . import rendezvous, wire

CONNECT_TIMEOUT = 10.0  # seconds for the armed process to answer hello


class AttachError(Exception):
    """Why attaching failed, in one line."""


def check_process(pid: int) -> None:
    if pid <= 0 or not rendezvous.alive(pid):
        raise AttachError(f"no process with pid {pid}")
    owner = rendezvous.process_owner(pid)
    if owner is not None and owner != rendezvous.own_uid():
        raise AttachError(f"process {pid} belongs to another user: hooktui attach opens your own processes only")


class Connection:
    """A connection to an armed process, past hello (`welcome` says where it is)."""

    def __init__(self, pid: int, where: Path | None = None) -> None:
        check_process(pid)
        try:
            folder = where or rendezvous.folder()
            info = rendezvous.read_info(pid, folder)
        except rendezvous.RendezvousError as exc:
            if "no such folder" in str(exc):
                raise AttachError(f"process {pid} is not armed (call hooktui.arm(model) in it, or start it with "
                                  "`hooktui run --armed SCRIPT.py`)") from None
            raise AttachError(str(exc)) from None
        self.pid = pid
        self.info = info
        path = rendezvous.socket_path(pid, folder)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(CONNECT_TIMEOUT)
        try:
            sock.connect(str(path))
        except FileNotFoundError:
            sock.close()
            raise AttachError(f"process {pid} is not armed (no socket {path.name} in {path.parent})") from None
        except ConnectionRefusedError:
            sock.close()
            raise AttachError(f"process {pid} is not listening (a socket left by an ended process?)") from None
        except OSError as exc:
            sock.close()
            raise AttachError(f"cannot connect to process {pid}: {exc.strerror or exc}") from None
        if not rendezvous.same_user(sock):
            sock.close()
            raise AttachError(f"the socket of process {pid} is held by another user: refused")
        self.sock = sock
        self.reader = wire.LineReader(sock, wire.OPENED_LIMIT)
        self._send_lock = threading.Lock()
        self.send(wire.Hello(token=info.token))
        reply = self.read()
        if isinstance(reply, wire.Refused):
            self.close()
            raise AttachError(f"process {pid} refused: {reply.why}")
        if not isinstance(reply, wire.Welcome):
            self.close()
            raise AttachError(f"process {pid} did not answer as an armed hooktui process")
        sock.settimeout(None)
        self.welcome = reply

    def send(self, message) -> None:
        with self._send_lock:
            wire.send(self.sock, wire.message_line(message))

    def read(self):
        """The next message (a wire message or an Event); None at the end of the stream."""
        try:
            line = self.reader.read()
        except socket.timeout:
            self.close()
            raise AttachError(f"process {self.pid} did not answer within {CONNECT_TIMEOUT:.0f} s") from None
        if line is None:
            return None
        try:
            return wire.decode_reply(line, f"process {self.pid}")
        except wire.WireError as exc:
            self.close()
            raise AttachError(str(exc)) from None

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()

    @property
    def label(self) -> str:
        return f"process {self.pid}" + ("" if self.welcome.rank is None else f" (rank {self.welcome.rank})")


def find_rank(pid: int, rank: int) -> int:
    """The pid of rank `rank` of the run that `pid` is a rank of, or the launcher of
    (torchrun: its workers are its children)."""
    where = rendezvous.folder()
    group = None
    try:
        group = rendezvous.read_info(pid, where).group or None
    except rendezvous.RendezvousError:
        pass
    for other in rendezvous.armed_pids(where):
        if not rendezvous.alive(other):
            continue
        try:
            info = rendezvous.read_info(other, where)
        except rendezvous.RendezvousError:
            continue
        if info.rank == rank and ((group is not None and info.group == group) or info.parent == pid or other == pid):
            return other
    raise AttachError(f"no armed rank {rank} of process {pid} (armed ranks are found among its children, "
                      "or beside it in its torchrun run)")


def ranks_beside(pid: int) -> list[int]:
    """The other armed ranks of the run that `pid` is a rank of."""
    where = rendezvous.folder()
    try:
        mine = rendezvous.read_info(pid, where)
    except rendezvous.RendezvousError:
        return []
    found = []
    for other in rendezvous.armed_pids(where):
        if other == pid or not rendezvous.alive(other):
            continue
        try:
            info = rendezvous.read_info(other, where)
        except rendezvous.RendezvousError:
            continue
        if mine.group and info.group == mine.group:
            found.append(other)
    return found


def pid_argument(text: str) -> int:
    try:
        pid = int(text)
    except ValueError:
        raise AttachError(f"{text!r} is not a process id") from None
    if not 0 < pid < 2**31:
        raise AttachError(f"{text!r} is not a process id")
    return pid
