"""Short, machine-independent file names for the screen (snapshots must not depend on
where the checkout lives)."""

from __future__ import annotations

import os
import re


def display_path(filename: str) -> str:
    """`filename` from `site-packages/` when it is in one, else relative to the working
    directory when it is inside it, else its basename."""
    if not os.path.isabs(filename):
        return filename
    marker = f"{os.sep}site-packages{os.sep}"
    if marker in filename:
        return filename.split(marker, 1)[1]
    try:
        relative = os.path.relpath(filename)
    except ValueError:  # another drive (Windows)
        relative = filename
    if not relative.startswith(os.pardir):
        return relative
    return os.path.basename(filename)


_FILE_LINE = re.compile(r'^(\s*File ")([^"]+)(".*)$')
_CARETS = re.compile(r"^\s*[\^~]+\s*$")
_LIBRARY = (f"{os.sep}site-packages{os.sep}", f"{os.sep}hooktui{os.sep}engine{os.sep}", f"{os.sep}lib{os.sep}python")


def _is_library(path: str) -> bool:
    return any(part in path for part in _LIBRARY) or path.startswith("<")


def user_traceback(traceback: str) -> tuple[str, int]:
    """The traceback with library frames (torch, the engine, the standard library) and
    caret lines left out, and paths shortened; also how many frames were left out."""
    out: list[str] = []
    skipped = 0
    skipping = False
    for line in traceback.splitlines():
        match = _FILE_LINE.match(line)
        if match:
            skipping = _is_library(match.group(2))
            if skipping:
                skipped += 1
                continue
            line = match.group(1) + display_path(match.group(2)) + match.group(3)
        elif skipping and line.startswith("    "):
            continue
        else:
            skipping = False
        if _CARETS.match(line):
            continue
        out.append(line)
    return "\n".join(out), skipped


def short_traceback(traceback: str) -> str:
    """The whole traceback with shortened paths."""
    lines = []
    for line in traceback.splitlines():
        match = _FILE_LINE.match(line)
        if match:
            line = match.group(1) + display_path(match.group(2)) + match.group(3)
        lines.append(line)
    return "\n".join(lines)
