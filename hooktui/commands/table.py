"""The readable table `hooktui trace` prints: one line per firing. Record text goes
through hooktui/visible.py: a module name or an error message never reaches the terminal
as control characters."""

from __future__ import annotations

from ..engine.records.records import Event, TraceInfo
from ..engine.records.format import shape_text, stats_line
from ..visible import visible_event, visible_info


def format_header(info: TraceInfo) -> str:
    info = visible_info(info)
    modules = len(info.modules)
    return (
        f"# {info.model}  ({modules} module{'' if modules == 1 else 's'}, {info.device}, torch {info.torch_version})\n"
        f"# backward from: {info.loss}\n"
        f"{'#':>4}  {'phase':8}  {'hook':15}  {'module':24}  {'call':>4}  {'grad_fn':24}  tensors"
    )


def format_event(event: Event) -> str:
    event = visible_event(event)
    module = event.module or "(root)"
    tensors = "; ".join(f"{t.name} {shape_text(t)}" for t in event.tensors) or "-"
    line = (
        f"{event.number:>4}  {event.phase:8}  {event.hook:15}  {module[:24]:24}  {event.call:>4}  "
        f"{(event.grad_fn or '-').rpartition('::')[2][:24]:24}  {tensors}"
    )
    for note in event.notes:
        line += f"\n{'':6}note: {note}"
    for tensor in event.tensors:
        flags = stats_line(tensor)
        if "NaN" in flags or "Inf" in flags:
            line += f"\n{'':6}{tensor.name}: {flags}"
    return line
