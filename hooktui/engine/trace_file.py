"""Trace files: JSON lines, a header line then one event per line. Plain JSON only
(never pickle): a trace may come from someone else."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from .records import Event, TraceInfo

FORMAT = "hooktui-trace"
VERSION = 1


class TraceFileError(Exception):
    """The file is not a readable hooktui trace; `str()` says where and why."""


def event_json(event: Event) -> str:
    return json.dumps(_finite(event.to_dict()), separators=(",", ":"))


def write_trace(path: str | Path, info: TraceInfo, events: Iterable[Event]) -> None:
    with open(path, "w", encoding="utf-8") as out:
        write_header(out, info)
        for event in events:
            out.write(event_json(event) + "\n")


def write_header(out: IO[str], info: TraceInfo) -> None:
    out.write(json.dumps({"format": FORMAT, "version": VERSION, "info": info.to_dict()}) + "\n")


def read_trace(path: str | Path) -> tuple[TraceInfo, list[Event]]:
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise TraceFileError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceFileError(f"{path}: cannot read: {exc}") from None
    if not lines:
        raise TraceFileError(f"{path}: empty file, not a hooktui trace")
    header = _parse(path, 1, lines[0])
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise TraceFileError(f"{path}: not a hooktui trace (write one with `hooktui trace MODEL --save FILE`)")
    if header.get("version") != VERSION:
        raise TraceFileError(f"{path}: trace format version {header.get('version')!r}, this hooktui reads {VERSION}")
    try:
        info = TraceInfo.from_dict(header.get("info"))
    except ValueError as exc:
        raise TraceFileError(f"{path}:1: bad header: {exc}") from None
    events = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            event = Event.from_dict(_parse(path, number, line))
            for tensor in event.tensors:
                if tensor.values is not None:
                    tensor.values = [float(v) for v in tensor.values]  # "nan"/"inf" strings back to floats
        except (ValueError, TypeError) as exc:
            raise TraceFileError(f"{path}:{number}: bad event: {exc}") from None
        events.append(event)
    return info, events


def _parse(path: Path, number: int, line: str) -> Any:
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise TraceFileError(f"{path}:{number}: not JSON ({exc.msg})") from None


def _finite(value: Any) -> Any:
    """JSON has no NaN/Infinity: write them as strings so every line is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value
