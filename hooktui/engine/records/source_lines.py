"""The lines of code a firing's Source pane shows, read without trusting the file name.

A record names a file, and a trace file may come from a stranger: `/dev/tty` would freeze
the reader, `/dev/zero` eat memory, `/proc/self/environ` show the environment. So a file is
read only when it is a regular Python file (`.py`) of at most SOURCE_FILE_MAX bytes, opened
without blocking; a symlink is resolved first, and the rules apply to its target. Saved traces carry the lines around each call site (`lines_near`), so that
`hooktui view` needs no file at all. No torch, no Textual.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping

SOURCE_FILE_MAX = 2 << 20  # bytes: larger "source files" are not read
CONTEXT = 12  # lines kept on each side of a call site in a saved trace
SUFFIXES = (".py", ".pyw")


def read_source_file(filename: str) -> list[str] | None:
    """The lines of `filename` (no line ends), or None when it is not a small regular
    Python file that can be read."""
    if not filename.endswith(SUFFIXES):
        return None
    try:
        # The rules apply to what the name leads to: `model.py` may be a symlink to
        # /etc/shadow or /dev/tty. The resolved path is opened, and not through a symlink.
        target = os.path.realpath(filename)
        if not target.endswith(SUFFIXES) or not _small_regular(os.stat(target)):
            return None
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(target, flags)
    except (OSError, ValueError):
        return None
    try:
        if not _small_regular(os.fstat(fd)):  # the name may have changed between the checks
            return None
        data = os.read(fd, SOURCE_FILE_MAX + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > SOURCE_FILE_MAX:
        return None
    return data.decode("utf-8", errors="replace").splitlines()


def _small_regular(info: os.stat_result) -> bool:
    # Size 0 also rules out /proc files, which say 0 whatever they hold.
    return stat.S_ISREG(info.st_mode) and 0 < info.st_size <= SOURCE_FILE_MAX


def lines_near(call_sites: Iterable[tuple[str, int]], context: int = CONTEXT) -> dict[str, dict[int, str]]:
    """{filename: {lineno: line}}: the lines within `context` of each call site, for the
    files that can be read safely."""
    wanted: dict[str, set[int]] = {}
    for filename, lineno in call_sites:
        wanted.setdefault(filename, set()).add(lineno)
    out: dict[str, dict[int, str]] = {}
    for filename, linenos in wanted.items():
        lines = read_source_file(filename)
        if not lines:
            continue
        kept = out.setdefault(filename, {})
        for lineno in linenos:
            for number in range(max(1, lineno - context), min(len(lines), lineno + context) + 1):
                kept[number] = lines[number - 1]
    return out


def file_lines(filename: str) -> Mapping[int, str] | None:
    """A local file's lines by number (1-based), read safely; None when not readable."""
    lines = read_source_file(filename)
    return None if lines is None else {number: line for number, line in enumerate(lines, start=1)}
