"""Every tensor of the current firing, one row each, with its notes above."""

from __future__ import annotations

from collections.abc import Callable

from rich.cells import cell_len
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.geometry import Size

from ...engine.analysis.compare import TensorDiff
from ...engine.records.records import Event, TensorRecord
from ...engine.records.format import number, shape_text, stats_line
from ..messages import TensorChosen
from .line_text import LineStatic
from .tensor_table import PADDING, TensorTable
from .text_update import set_text

# `view --against`: tensor name -> (the other run's tensor, how the two compare).
Twins = dict[str, tuple[TensorRecord | None, TensorDiff]]

BLOCKS = "▁▂▃▄▅▆▇█"


def sparkline(hist: list[int] | None) -> str:
    """A histogram as block characters; an empty bin is a blank."""
    if not hist:
        return ""
    top = max(hist)
    if top <= 0:
        return " " * len(hist)
    out = []
    for count in hist:
        if count <= 0:
            out.append(" ")
        else:
            out.append(BLOCKS[min(len(BLOCKS) - 1, max(0, -(-count * len(BLOCKS) // top) - 1))])
    return "".join(out)


def loudness(tensor: TensorRecord) -> str | None:
    """"error" for NaN/Inf, "warning" for all zeros or a missing tensor, else None."""
    if tensor.is_missing:
        return "warning"
    stats = tensor.stats
    if stats is None:
        return None
    if stats.nan or stats.posinf or stats.neginf:
        return "error"
    if stats.count and stats.zeros == stats.count:
        return "warning"
    return None


def tensor_name(tensor: TensorRecord) -> str:
    return f"{tensor.name} → {tensor.target}" if tensor.target else tensor.name


NOTES_ROWS = 5  # the summary and notes above the table: #notes's max-height


def notes_text(event: Event) -> Text:
    text = Text()
    for note in event.notes:
        if text:
            text.append("\n")
        text.append(" note ", "bold reverse")
        text.append(" " + note, "bold red" if event.hook == "error" else "bold yellow")
    for tensor in event.tensors:
        if tensor.note:
            if text:
                text.append("\n")
            text.append(f"{tensor.name}: {tensor.note}", "italic")
    return text


def summary_text(event: Event, columns: list[str]) -> Text:
    """One line over the table: how many tensors, and the dtype/device they share."""
    present = [t for t in event.tensors if not t.is_missing]
    text = Text(f"{event.hook} of {event.module or '(root)'}: ", style="bold")
    text.append(f"{len(event.tensors)} tensor{'s' if len(event.tensors) != 1 else ''}", "")
    for key in ("dtype", "device"):
        values = {getattr(t, key) for t in present}
        if key not in columns and values:
            text.append(f" · {values.pop()}", "dim")
    return text


def twin_cells(twins: Twins | None, name: str) -> tuple[Text, Text]:
    """The `vs B` and `B` cells of a tensor: how it compares, and the other run's stats."""
    if twins is None:
        return Text("B has no such firing", "bold red"), Text("")
    if name not in twins:
        return Text("≠ only in A", "bold red"), Text("")
    other, diff = twins[name]
    theirs = Text(stats_line(other) if other is not None else "")
    if diff.differs:
        why = diff.reason or f"{number(diff.rel)} in {diff.what}"
        return Text(f"≠ {why}", "bold red"), theirs
    if diff.rel is None:
        return Text("="), theirs
    return Text(f"= {number(diff.rel)}" if diff.rel else "= same", "green"), theirs


# Columns left out, in this order, when the table would not fit the pane: a column cut
# partway (`histogr`) says nothing.
DROPPABLE = ("histogram", "B")


def fit_columns(columns: list[str], widths: list[int], room: int, label_min: int) -> tuple[list[str], list[int]]:
    """The columns that fit in `room` cells and their widths. The shape and statistics must
    stay on screen: the tensor's label (a node firing's is long: `grad_inputs[1] → the
    module's input args[0]`) gives way as far as they need, down to `label_min` cells (the
    slot's own name and `…`); then a column of DROPPABLE is shown only if it fits whole."""
    if room <= 0:
        return list(columns), list(widths)
    pad = 2 * PADDING  # the table's, each side of every column
    used = sum(w + pad for c, w in zip(columns, widths) if c not in DROPPABLE)
    label = widths[0]
    if used > room:
        label = max(min(label, max(len(columns[0]), label_min)), label - (used - room))
        used -= widths[0] - label
    kept, kept_widths = [columns[0]], [label]
    for c, w in zip(columns[1:], widths[1:]):
        if c in DROPPABLE:
            if used + w + pad > room:
                continue
            used += w + pad
        kept.append(c)
        kept_widths.append(w)
    return kept, kept_widths


class TensorsPane(Vertical):
    ALLOW_MAXIMIZE = True  # `z` zooms the whole pane, not the table inside it
    """A summary and the notes, then one row per tensor: name, shape, stats one-liner,
    histogram (and dtype and device when the tensors differ in them)."""

    DEFAULT_CSS = """
    TensorsPane { height: 1fr; }
    TensorsPane > #notes { height: auto; max-height: 5; padding: 0 1; }  /* NOTES_ROWS */
    TensorsPane > TensorTable { height: 1fr; scrollbar-size: 1 1; }
    """

    def __init__(self, event: Event | None = None, selected: int = 0, against: Callable[[Event], Twins | None] | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self._composed = False  # children exist (is_mounted is set only after on_mount)
        self._event = event
        self._selected = selected
        self._fitted_size = Size(0, 0)  # the size the columns were last fitted to
        self.against = against  # the other run's tensors (`view --against`), else None

    def compose(self) -> ComposeResult:
        yield LineStatic(id="notes")  # one line drawn without the Content pipeline
        yield TensorTable(id="tensor-table")

    def on_mount(self) -> None:
        self._composed = True
        self.show(self._event, self._selected)

    @property
    def table(self) -> TensorTable:
        return self.query_one(TensorTable)

    def columns_for(self, event: Event) -> list[str]:
        # With `--against`, how the tensor compares comes before the long statistics: seen at 80 columns.
        columns = ["tensor", "shape", "vs B", "stats", "B", "histogram"] if self.against is not None else ["tensor", "shape", "stats", "histogram"]
        present = [t for t in event.tensors if not t.is_missing]
        for key in ("dtype", "device"):
            if len({getattr(t, key) for t in present}) > 1:
                columns.append(key)
        return columns

    def show(self, event: Event | None, selected: int = 0) -> None:
        self._event, self._selected = event, selected
        if not self._composed or not self.query(TensorTable):
            return  # on_mount shows it (no table: being removed, as the lower panes recompose)
        table = self.table
        head = self.query_one("#notes", LineStatic)
        if event is None:
            table.clear()
            set_text(head, "")
            return
        columns = self.columns_for(event)
        text = summary_text(event, columns)
        notes = notes_text(event)
        if notes:
            text.append("\n")
            text.append_text(notes)
        set_text(head, self._within_notes_height(text))
        rows = []
        twins = self.against(event) if self.against is not None else None
        for tensor in event.tensors:
            level = loudness(tensor)
            style = {"error": "bold red", "warning": "yellow"}.get(level or "", "")
            hist = tensor.stats.hist if tensor.stats else None
            cells = {
                "tensor": Text(tensor_name(tensor), style="bold" if level == "error" else ""),
                "shape": Text(shape_text(tensor), style="yellow" if tensor.is_missing else ""),
                "stats": Text(stats_line(tensor), style=style),
                "histogram": Text(sparkline(hist), style="cyan"),
                "dtype": Text(tensor.dtype or ""),
                "device": Text(tensor.device or ""),
            }
            if self.against is not None:
                cells["vs B"], cells["B"] = twin_cells(twins, tensor.name)
            rows.append([cells[c] for c in columns])
        # Explicit widths: the table then never shows a half-measured state. Fitted to the
        # pane once it has a size; fitted again on a resize.
        natural = [max([len(column), *(row[i].cell_len for row in rows)]) for i, column in enumerate(columns)]
        slot = max((len(t.name) + 2 for t in event.tensors), default=0)  # `grad_inputs[0] …`
        # The vertical scrollbar's cell, when the rows will not fit (or the height is not known yet).
        bar = 1 if len(rows) + 1 > self.table.size.height else 0
        kept, widths = fit_columns(columns, natural, self.size.width - bar if self.size.width else 0, slot)
        self._fitted_size = self.size
        shown = []
        for row in rows:
            cells = [row[columns.index(c)] for c in kept]
            if cells[0].cell_len > widths[0]:  # the whole label is in the Values pane's title
                cells[0] = cells[0].copy()
                cells[0].truncate(widths[0], overflow="ellipsis")
            shown.append(cells)
        # The table repaints the rows whose cells changed (all of them, and the header, when
        # the columns or their widths did).
        table.fill(kept, widths, shown, cursor=selected)

    def _within_notes_height(self, text: Text) -> Text:
        """The summary and notes cut to the rows #notes has (NOTES_ROWS), the last row
        saying so: a long note was clipped mid-sentence, with nothing to tell it was."""
        width = self.size.width - 2  # the padding
        if width <= 0:
            return text
        lines = text.wrap(self.app.console, width)
        if len(lines) <= NOTES_ROWS:
            return text
        kept = Text("\n").join(lines[: NOTES_ROWS - 1])
        kept.append(f"\n… {len(lines) - NOTES_ROWS + 1} more lines: x shows every note", "dim")
        return kept

    def rows_wanted(self, width: int) -> int:
        """Rows that show the current firing whole at `width` cells: the summary and notes
        (wrapped, at most 5: their CSS), the table's header and its rows."""
        event = self._event
        if event is None:
            return 2
        head = summary_text(event, self.columns_for(event))
        notes = notes_text(event)
        lines = [head.plain, *(notes.plain.split("\n") if notes else [])]
        room = max(1, width - 2)  # the notes' padding
        wrapped = sum(max(1, -(-cell_len(line) // room)) for line in lines)
        return min(wrapped, 5) + 1 + len(event.tensors)

    def on_resize(self) -> None:
        if self._composed and self.size != self._fitted_size:
            self.show(self._event, self.table.cursor_row)

    def on_tensor_table_row_highlighted(self, message: TensorTable.RowHighlighted) -> None:
        message.stop()
        self.post_message(TensorChosen(message.cursor_row))
