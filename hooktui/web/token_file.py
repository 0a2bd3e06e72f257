"""`--token-file PATH`: `serve`'s token for scripts, readable by this user only.

The token grants code execution as this user, so the file is made mode 0600 from the start
(os.open with the mode, never a chmod after a default-mode create), a symlink at PATH is
refused rather than followed (another user could point it anywhere, or at a file they read),
and an existing file must be a regular one that this user owns: its mode is set to 0600
before the token is written into it.
"""

from __future__ import annotations

import os
import stat


class TokenFileError(Exception):
    pass


def check_token_file(path: str) -> None:
    """Before the server listens: the mistakes that need no writing to find."""
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        raise TokenFileError(f"--token-file {path}: no such folder {folder}")
    if os.path.islink(path):
        raise TokenFileError(f"--token-file {path}: is a symlink; give a path that is not one")
    if os.path.isdir(path):
        raise TokenFileError(f"--token-file {path}: is a folder")


def write_token_file(path: str, token: str) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        if os.path.islink(path):
            raise TokenFileError(f"--token-file {path}: is a symlink; give a path that is not one") from None
        raise TokenFileError(f"--token-file {path}: cannot write it: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise TokenFileError(f"--token-file {path}: not a regular file")
        if info.st_uid != os.getuid():
            raise TokenFileError(f"--token-file {path}: belongs to another user")
        os.fchmod(fd, 0o600)
        os.ftruncate(fd, 0)
        os.write(fd, f"{token}\n".encode())
    except OSError as exc:
        raise TokenFileError(f"--token-file {path}: cannot write it: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def remove_token_file(path: str, token: str) -> None:
    """At exit: the file goes, if it still holds this server's token (and is no symlink)."""
    try:
        if not os.path.islink(path):
            with open(path, encoding="utf-8") as file:
                if file.read().strip() == token:
                    os.unlink(path)
    except OSError:
        pass
