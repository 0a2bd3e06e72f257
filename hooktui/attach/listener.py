"""The armed process's side of the socket: one daemon thread blocked in accept().

Nothing runs while nobody connects: the thread sleeps in the kernel and never takes the GIL.
A connection is checked before a byte of it is read: the peer's uid (SO_PEERCRED) must be
this process's, then its first line must be a `hello` with this process's token (compared
in constant time), within HELLO_TIMEOUT. Only then is it handed to `on_attach(sock,
reader)`, on a thread of its own, which owns it until it returns. One attacher at a time: a
second one is refused with a line that says why.
"""

from __future__ import annotations

import hmac
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path

from . import rendezvous, wire

HELLO_TIMEOUT = 10.0  # seconds a connection has to say hello with the token


class Listener:
    def __init__(self, path: Path, token: str, welcome: Callable[[], wire.Welcome],
                 on_attach: Callable[[socket.socket, wire.LineReader], None]) -> None:
        self.path = path
        self._token = token
        self._welcome = welcome
        self._on_attach = on_attach
        self._sock = rendezvous.bind_listener(path)
        self._busy = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._accept_loop, name="hooktui attach listener", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop listening (the socket file goes too). An attacher already in stays until it leaves."""
        if self._closed:
            return
        self._closed = True
        try:
            os.unlink(self.path)
        except OSError:
            pass
        try:
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the thread in accept()
        except OSError:
            pass
        self._sock.close()

    def close_in_child(self) -> None:
        """After a fork: the child has no listener thread; its copy of the socket goes."""
        self._closed = True
        try:
            self._sock.close()
        except OSError:
            pass

    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                if self._closed:
                    return
                continue
            threading.Thread(target=self._serve, args=(conn,), name="hooktui attach", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            reader = self._checked(conn)
            if reader is None:
                return
            if not self._busy.acquire(blocking=False):
                _refuse(conn, "another hooktui attach is attached to this process; quit it first")
                return
            try:
                self._on_attach(conn, reader)
            finally:
                self._busy.release()
        except Exception:  # hooktui's own failure: the training goes on, this attacher is let go
            pass
        finally:
            try:
                conn.close()
            except OSError:
                pass

    def _checked(self, conn: socket.socket) -> wire.LineReader | None:
        """The connection's reader once the peer has proven who it is; None (refused) otherwise."""
        if not rendezvous.same_user(conn):
            _refuse(conn, "another user's process: refused")
            return None
        conn.settimeout(HELLO_TIMEOUT)
        reader = wire.LineReader(conn, wire.COMMAND_MAX)
        try:
            line = reader.read()
            hello = wire.decode_command(line) if line is not None else None
        except (wire.WireError, OSError):
            hello = None
        if not isinstance(hello, wire.Hello) or not hmac.compare_digest(hello.token.encode(), self._token.encode()):
            _refuse(conn, "wrong token: refused")
            return None
        if hello.version != wire.VERSION:
            _refuse(conn, f"this process speaks hooktui attach version {wire.VERSION}, the attacher {hello.version}")
            return None
        conn.settimeout(None)
        wire.send(conn, wire.message_line(self._welcome()))
        return reader


def _refuse(conn: socket.socket, why: str) -> None:
    try:
        wire.send(conn, wire.message_line(wire.Refused(why)))
    except OSError:
        pass
