"""The Explain pane: what the current firing means, in plain words (hooktui/explain.py).

✓ lines are checks that hold, ✗ lines checks that fail, the rest are facts; `names` are
emphasised. For a legacy_backward firing (or a backward firing whose call has a shown
legacy one) a two-column table sets what the deprecated register_backward_hook receives
beside what the full backward hook of the same module call receives.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ...engine.analysis.born import where_born
from ...engine.analysis.breakpoints import Stop
from ...engine.records.records import Event, TraceInfo, firings_of
from ...explain import NOTE_CHARS, NOTES_SHOWN, Statement, explain, input_subject
from ...engine.records.format import shape_text
from .text_view import TextView

STATEMENTS_SHOWN = 300  # statements drawn; the rest are counted (each paint stays bounded)
MARK = {True: ("✓ ", "bold green"), False: ("✗ ", "bold red"), None: ("• ", "dim")}


def statement_text(statement: Statement) -> Text:
    """One statement: its mark, then the text with `backticked` names in bold."""
    mark, mark_style = MARK[statement.ok]
    style = {True: "green", False: "red", None: ""}[statement.ok]
    text = Text()
    text.append(mark, mark_style)
    for i, part in enumerate(statement.text.split("`")):
        if part:
            text.append(part, f"{style} bold" if i % 2 else style)
    return text


def call_partner(event: Event, events: Sequence[Event], hidden: set[str]) -> tuple[Event, Event] | None:
    """(legacy, full) firings of the current firing's module call, when both are known and
    the legacy one is shown; None otherwise."""
    if event.hook not in ("legacy_backward", "backward") or "legacy_backward" in hidden:
        return None
    want = "backward" if event.hook == "legacy_backward" else "legacy_backward"
    other = next((e for e in firings_of(events, want, event.module) if e.call == event.call), None)
    if other is None:
        return None
    return (event, other) if event.hook == "legacy_backward" else (other, event)


def _entry(name: str, shape: str, what: str, style: str = "") -> Text:
    text = Text()
    text.append(name, "bold")
    text.append(f"  {shape}", style or "cyan")
    text.append(f"\n  {what}", "dim")
    return text


def side_by_side(legacy: Event, full: Event, events: Sequence[Event], info: TraceInfo | None = None) -> Table:
    """What each hook of one module call receives, in two columns."""
    who = legacy.module or "(root)"
    table = Table(expand=True, box=box.SIMPLE_HEAD, show_edge=False, padding=(0, 1), title_justify="left", title_style="bold")
    # Rich reads a str title or header as markup: record text goes in as Text.
    table.title = Text(f"{who} call {legacy.call}: one backward, two hooks (register_backward_hook vs full)", style="bold")
    table.add_column(Text(f"legacy hook #{legacy.index}"), ratio=1, header_style="bold red")
    table.add_column(Text(f"full backward hook #{full.index}"), ratio=1, header_style="bold green")
    left: list[RenderableType] = [Text.assemble(("attached to ", "dim"), (legacy.grad_fn or "?", "bold"), (" (the module's last op)", "dim"))]
    for tensor in legacy.tensors:
        if not tensor.name.startswith("grad_input"):
            continue
        shape = "None" if tensor.is_missing else shape_text(tensor)
        left.append(_entry(tensor.name, shape, f"= grad w.r.t. {tensor.target or '?'}", "yellow"))
    for note in legacy.notes[:NOTES_SHOWN]:
        if len(note) > NOTE_CHARS:
            note = f"{note[:NOTE_CHARS]}… {len(note) - NOTE_CHARS} more characters"
        left.append(Text(("✗ " if "≠" in note.split(":")[0] else "") + note, "red" if "≠" in note.split(":")[0] else "italic"))
    if len(legacy.notes) > NOTES_SHOWN:
        left.append(Text(f"… {len(legacy.notes) - NOTES_SHOWN} more notes", "dim"))
    right: list[RenderableType] = [Text.assemble(("attached to ", "dim"), ("the module", "bold"), (" (its inputs and outputs)", "dim"))]
    for tensor in full.tensors:
        if tensor.is_missing:
            right.append(_entry(tensor.name, "None", f"= {tensor.target or '?'}: {tensor.missing}", "yellow"))
        else:
            target = tensor.target or "?"
            what = input_subject(target)
            right.append(_entry(tensor.name, shape_text(tensor), f"= grad w.r.t. {what} ({target})"))
    arrived = {t.target: e.index for e in firings_of(events, "param_grad", full.module) for t in e.tensors}
    module = next((m for m in info.modules if m.name == full.module), None) if info else None
    names = [f"{full.module}.{p}" if full.module else p for p in (module.params if module else {})] or list(arrived)
    if names:
        params = Text()
        params.append("parameters: never in grad_input", "dim")
        for name in names:
            params.append(f"\n  {name}", "bold")
            params.append(f" → param_grad #{arrived[name]}" if name in arrived else " → its own param_grad firing", "dim")
        right.append(params)
    table.add_row(Group(*left), Group(*right))
    return table


def stop_text(stop: Stop, events: Sequence[Event]) -> Text:
    """Why the run stopped here; for a value breakpoint, where the bad value was born."""
    text = Text()
    text.append("■ stopped: ", "bold red")
    text.append(stop.breakpoint.label, "bold")
    text.append(f": {stop.reason}")
    if stop.breakpoint.kind in ("nonfinite", "threshold"):
        born = where_born(events, stop.breakpoint, upto=stop.key)
        if born is not None:
            text.append("\nwhere it was born" + (f" (#{born.origin_number})" if born.origin_key != stop.key else "") + ":", "bold")
            for line in born.lines:
                text.append(f"\n  {line}")
    return text


class ExplainPane(TextView):
    DEFAULT_CSS = """
    ExplainPane { height: 1fr; padding: 0 1; scrollbar-size: 1 1; }
    """

    def __init__(
        self,
        event: Event | None = None,
        events: Sequence[Event] = (),
        info: TraceInfo | None = None,
        hidden: set[str] | None = None,
        stop: Stop | None = None,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self._composed = False
        self._args: tuple = (event, events, info, set(hidden or ()), stop)
        self._key: tuple | None = None
        self._stale = False  # held (`hold`) and not drawn yet
        self.statements: list[Statement] = []

    def on_mount(self) -> None:
        self._composed = True
        self.show(*self._args)

    def hold(self, event: Event | None, events: Sequence[Event], info: TraceInfo | None, hidden: set[str], stop: Stop | None = None) -> None:
        """Take what `show` takes without explaining it: the pane is not on screen (the
        lower panes' hidden tabs). `up_to_date` explains it when shown or read."""
        self._args = (event, events, info, set(hidden), stop)
        self._stale = True

    def up_to_date(self) -> ExplainPane:
        """This pane, explaining what it was last given (`statements` and the text then hold)."""
        if self._stale and self._composed:
            self.show(*self._args)
        return self

    def on_show(self) -> None:
        self.up_to_date()

    def show(self, event: Event | None, events: Sequence[Event], info: TraceInfo | None, hidden: set[str], stop: Stop | None = None) -> None:
        """Explain `event` among `events` (and why the run stopped there, if it did). Cheap
        to call again: only redraws when the event, the number of firings known, the hidden
        kinds or the stop changed."""
        self._args = (event, events, info, set(hidden), stop)
        if not self._composed:
            return
        self._stale = False
        key = (id(event), event.index if event else None, len(events), frozenset(hidden), stop)
        if key == self._key:
            return
        self._key = key
        if event is None:
            self.statements = []
            self.set_renderable("")
            return
        self.statements = explain(event, events, info)
        # A module or hook breakpoint is said in the status line; a value one needs words.
        said = stop is not None and stop.breakpoint.kind not in ("module", "user_hook")
        parts: list[RenderableType] = [stop_text(stop, events), Text("")] if said else []
        pair = call_partner(event, events, hidden)
        shown = self.statements[:STATEMENTS_SHOWN]
        if len(self.statements) > STATEMENTS_SHOWN:  # a firing of 10,000 tensors: a bounded paint
            shown.append(Statement(f"… {len(self.statements) - STATEMENTS_SHOWN} more"))
        body = Text("\n").join(statement_text(s) for s in shown)
        if pair is not None and event.hook == "legacy_backward":
            parts += [side_by_side(*pair, events, info), Text(""), body]
        elif pair is not None:
            parts += [body, Text(""), side_by_side(*pair, events, info)]
        else:
            parts.append(body)
        self.set_renderable(Group(*parts))
