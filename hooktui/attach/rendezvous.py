"""Where an armed process listens, and who may talk to it.

Every armed process (hooktui.arm) listens on a Unix socket `<folder>/<pid>.sock`, and writes
`<folder>/<pid>.json`: its per-process token (32 random bytes) and what `hooktui attach`
needs to find a rank (rank, world size, the run it belongs to, its parent's pid). The folder
is this user's: `$XDG_RUNTIME_DIR/hooktui` where that is a folder of this user's, else
`/tmp/hooktui-<uid>`; it is made mode 0700 and refused when it is a symlink, another user's,
or open to others. The socket is 0600 (made under umask 0177), the JSON file 0600 (created
with that mode, O_EXCL, O_NOFOLLOW). The process also checks every peer's uid (SO_PEERCRED)
and the token before it reads anything else: another local user can neither connect, nor
read the token, nor get past the check with a token stolen some other way from another uid.

The attacher checks what it reads the same way: the JSON file must be a regular file of
this user's, mode 0600, small, with the fields it expects.

A process killed by a signal (SIGKILL, the OOM killer, a scheduler's timeout) never gets to
remove its pair: `arm()` prunes the pairs of dead processes as it starts (prune_stale).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import stat
import struct
from dataclasses import dataclass
from pathlib import Path

TOKEN_BYTES = 32
INFO_MAX = 4096  # bytes of a <pid>.json file
SOCKET_NAME_MAX = 100  # sun_path holds 108 bytes


class RendezvousError(Exception):
    """The folder or a file in it is not safe to use; `str()` says why in one line."""


def own_uid() -> int:
    """This process's uid (a function: tests compare a peer with another uid)."""
    return os.getuid()


def folder(create: bool = False) -> Path:
    """This user's folder of armed processes (made, 0700, with `create`)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "").strip()
    base = None
    if runtime and os.path.isabs(runtime):
        try:
            info = os.stat(runtime)
            if stat.S_ISDIR(info.st_mode) and info.st_uid == own_uid():
                base = Path(runtime) / "hooktui"
        except OSError:
            pass
    path = base if base is not None else Path("/tmp") / f"hooktui-{own_uid()}"
    if create:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            raise RendezvousError(f"{path}: cannot make the folder: {exc.strerror or exc}") from None
    _check_folder(path)
    return path


def _check_folder(path: Path) -> None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise RendezvousError(f"{path}: no such folder (no process of yours is armed)") from None
    except OSError as exc:
        raise RendezvousError(f"{path}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise RendezvousError(f"{path}: not a folder (a symlink or a file is there): refused")
    if info.st_uid != own_uid():
        raise RendezvousError(f"{path}: belongs to another user: refused")
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise RendezvousError(f"{path}: open to other users (mode {stat.S_IMODE(info.st_mode):o}); it must be 0700")


def socket_path(pid: int, where: Path | None = None) -> Path:
    return (where or folder()) / f"{pid}.sock"


def info_path(pid: int, where: Path | None = None) -> Path:
    return (where or folder()) / f"{pid}.json"


def new_token() -> str:
    return secrets.token_hex(TOKEN_BYTES)


@dataclass(frozen=True)
class ArmedInfo:
    """What `<pid>.json` says of an armed process."""

    pid: int
    token: str
    rank: int | None = None
    world: int | None = None
    group: str = ""  # the run it belongs to (torchrun's); "" when not distributed
    parent: int = 0


def write_info(where: Path, info: ArmedInfo) -> Path:
    path = info_path(info.pid, where)
    try:
        os.unlink(path)  # a file left by an earlier process with this pid
    except FileNotFoundError:
        pass
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, json.dumps(info.__dict__).encode())
    finally:
        os.close(fd)
    return path


def read_info(pid: int, where: Path | None = None) -> ArmedInfo:
    """`<pid>.json`, checked: a regular file of this user's, 0600, small, the right fields."""
    path = info_path(pid, where)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise RendezvousError(f"process {pid} is not armed (no {path.name} in {path.parent})") from None
    except OSError as exc:
        raise RendezvousError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != own_uid() or stat.S_IMODE(info.st_mode) & 0o077:
            raise RendezvousError(f"{path}: not a 0600 file of yours: refused")
        data = os.read(fd, INFO_MAX + 1)
    finally:
        os.close(fd)
    if len(data) > INFO_MAX:
        raise RendezvousError(f"{path}: longer than {INFO_MAX} bytes: refused")
    try:
        fields = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise RendezvousError(f"{path}: not JSON: refused") from None
    return _armed_info(path, fields, pid)


def _armed_info(path: Path, fields, pid: int) -> ArmedInfo:
    def number(value, low: int = 0) -> bool:
        return type(value) is int and low <= value < 2**31

    ok = (type(fields) is dict and set(fields) == {"pid", "token", "rank", "world", "group", "parent"}
          and fields["pid"] == pid and type(fields["token"]) is str and len(fields["token"]) == 2 * TOKEN_BYTES
          and all(c in "0123456789abcdef" for c in fields["token"])
          and (fields["rank"] is None or number(fields["rank"])) and (fields["world"] is None or number(fields["world"], 1))
          and type(fields["group"]) is str and len(fields["group"]) <= 512 and number(fields["parent"]))
    if not ok:
        raise RendezvousError(f"{path}: not what hooktui.arm writes: refused")
    return ArmedInfo(**fields)


def armed_pids(where: Path | None = None) -> list[int]:
    """The pids with a `<pid>.json` in this user's folder (alive or not)."""
    try:
        names = os.listdir(where or folder())
    except (OSError, RendezvousError):
        return []
    return sorted(int(name[:-5]) for name in names if name.endswith(".json") and name[:-5].isdigit())


def prune_stale(where: Path) -> list[int]:
    """Remove the `<pid>.json` and `<pid>.sock` that processes no longer alive left in this
    user's folder `where` (already checked: 0700, this user's); returns their pids. Only
    regular files and sockets of this user's, named by a pid, are removed. A socket that
    still answers is kept whatever the pid says: the same folder may be seen from another
    pid namespace (a container), where that pid means another process."""
    try:
        names = os.listdir(where)
    except OSError:
        return []
    by_pid: dict[int, list[str]] = {}
    for name in names:
        stem, dot, kind = name.rpartition(".")
        if dot and kind in ("json", "sock") and stem.isascii() and stem.isdigit():
            by_pid.setdefault(int(stem), []).append(name)
    pruned = []
    for pid, files in sorted(by_pid.items()):
        if pid == os.getpid() or alive(pid) or _answers(where / f"{pid}.sock"):
            continue
        removed = False
        for name in files:
            path = where / name
            try:
                info = os.lstat(path)
                mine = info.st_uid == own_uid() and (stat.S_ISREG(info.st_mode) or stat.S_ISSOCK(info.st_mode))
                if mine:
                    os.unlink(path)
                    removed = True
            except OSError:  # gone already (another process pruned it), or not ours to remove
                continue
        if removed:
            pruned.append(pid)
    return pruned


def _answers(path: Path) -> bool:
    """A process listens on the socket at `path` (connection refused or no socket: none)."""
    try:
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            return False
    except OSError:
        return False
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(1.0)
    try:
        sock.connect(str(path))
    except OSError:
        return False
    finally:
        sock.close()
    return True


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, another user's
        return True
    return True


def process_owner(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end (SO_PEERCRED, Linux); None where unknown."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    data = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", data)
    return uid


def same_user(sock: socket.socket) -> bool:
    """The peer is this user (never true where the kernel cannot say)."""
    uid = peer_uid(sock)
    return uid is not None and uid == own_uid()


def bind_listener(path: Path) -> socket.socket:
    """A Unix socket at `path`, mode 0600 from the start, listening."""
    if len(os.fsencode(path)) > SOCKET_NAME_MAX:
        raise RendezvousError(f"{path}: too long a path for a Unix socket (set XDG_RUNTIME_DIR to a short folder)")
    try:
        os.unlink(path)  # a socket left by an earlier process with this pid
    except FileNotFoundError:
        pass
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(str(path))
    except OSError as exc:
        sock.close()
        raise RendezvousError(f"{path}: cannot listen there: {exc.strerror or exc}") from None
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(4)
    return sock
