"""The selected tensor's values as a grid. Tensors with more than two dims show one 2-D
slice at a time: `[` / `]` step through the slices of the leading dims (row-major),
`{` / `}` jump by the outermost of them.

A record keeps only a leading block of values. While a live session is paused in the
firing shown, the tensor itself is still there, unchanged: the slices are then read from
it, every one of them. Otherwise stepping past the kept block says so."""

from __future__ import annotations

import itertools
import math

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical

from ...engine.records.records import TensorRecord
from ...engine.records.format import number, shape_text
from .line_text import LineStatic
from .text_update import set_text
from .values_grid import ValuesGrid


def dims_text(shape: list[int]) -> str:
    return "×".join(str(n) for n in shape) if shape else "scalar"


def slice_count(tensor: TensorRecord | None) -> int:
    """How many 2-D slices the kept block of `tensor` has."""
    if tensor is None or tensor.values is None or tensor.values_shape is None:
        return 0
    return max(1, math.prod(tensor.values_shape[:-2])) if len(tensor.values_shape) > 2 else 1


def unkept_slices_text(tensor: TensorRecord | None) -> str | None:
    """What to say when `[`/`]` would go past the kept block: the tensor has more 2-D
    slices than were kept at the firing (records keep a leading block of values only)."""
    if tensor is None or tensor.shape is None or tensor.values is None or tensor.values_shape is None:
        return None
    stored = tensor.stored_shape
    if len(stored) <= 2 or math.prod(stored[:-2]) <= slice_count(tensor):
        return None
    return (f"showing the first {dims_text(tensor.values_shape)} of {stored_text(tensor)}: "
            "the other slices were not kept at this firing")


def stored_text(tensor: TensorRecord) -> str:
    """What the value block is cut from: the tensor's shape, or a nested or sparse tensor's stored values."""
    if tensor.layout is None:
        return shape_text(tensor)
    return f"the {dims_text(tensor.layout.stored)} stored values"


def layout_text(tensor: TensorRecord) -> str | None:
    """How a nested or sparse tensor's values sit in it (records.LayoutRecord), one line."""
    layout = tensor.layout
    if layout is None:
        return None
    if layout.index is not None:
        shown = ", ".join(str(i[0]) if len(i) == 1 else "(" + ", ".join(map(str, i)) + ")" for i in layout.index[:12])
        more = ", …" if len(layout.index) > 12 or layout.stored[0] > len(layout.index) else ""
        return f"{layout.describe()} (coalesced), rows {shown}{more}"
    return f"{layout.describe()}; rows part:row, one part after the other"


def stored_row_labels(tensor: TensorRecord) -> list[str] | None:
    """The grid's row labels where a 2-D block of stored values has rows that are not the
    tensor's: a sparse tensor's stored rows by their index (Embedding's gradient: "7"), a
    nested tensor's by component and row ("1:2", row 2 of component 1). None otherwise."""
    layout = tensor.layout
    if layout is None or len(tensor.values_shape or []) != 2:
        return None
    if layout.index is not None:
        return None if any(len(i) != 1 for i in layout.index) else [str(i[0]) for i in layout.index]
    parts = layout.parts or []
    if not parts or any(len(p) != 2 for p in parts) or sum(p[0] for p in parts) != layout.stored[0]:
        return None  # not joined row by row (engine/summaries/layouts.py flattens those)
    # As many labels as the values fill rows, never as many as a trace file's parts claim.
    cols = tensor.values_shape[1]
    shown = min(tensor.values_shape[0], len(tensor.values or ()) // cols) if cols else 0
    rows = ((k, r) for k, p in enumerate(parts) for r in range(p[0]))
    return [f"{k}:{r}" for k, r in itertools.islice(rows, shown)]


def live_tensor(app, tensor: TensorRecord | None):
    """The live tensor behind `tensor` while the model is paused in its firing, else None
    (asked of the app's Source: the UI reaches a live session only through it)."""
    source = getattr(app, "source", None)
    return source.live_tensor(tensor) if source is not None else None


def live_slice(tensor: TensorRecord, live, n: int) -> TensorRecord:
    """Slice `n` (row-major over the leading dims of the whole tensor) of `live`, at most
    as many rows and columns as the kept block, as a record the grid can show."""
    lead_dims = tensor.shape[:-2]
    lead = slice_index(list(lead_dims) + [0, 0], n)
    rows, cols = (tensor.values_shape or tensor.shape)[-2:]
    part = live.detach()[tuple(lead)][:rows, :cols]
    part = part.abs() if part.is_complex() else part
    return TensorRecord(
        tensor.name, tensor.shape, tensor.dtype, values=part.double().reshape(-1).tolist(),
        values_shape=[1] * len(lead) + list(part.shape),
    )


def slice_index(block: list[int], n: int) -> list[int]:
    """Slice number `n` as indices into the leading dims of `block` (row-major)."""
    lead = block[:-2]
    out = []
    for size in reversed(lead):
        out.append(n % size if size else 0)
        n = n // size if size else 0
    return list(reversed(out))


def grid(tensor: TensorRecord, n: int) -> tuple[list[list[float]], list[int]]:
    """Rows of the 2-D slice `n` of the kept block, and its leading indices."""
    block = tensor.values_shape or []
    values = tensor.values or []
    if len(block) == 0:
        return [values[:1]], []
    if len(block) == 1:
        return [values[: block[0]]], []
    rows, cols = block[-2], block[-1]
    start = n * rows * cols
    chunk = values[start : start + rows * cols]
    # As many rows as the values fill, never as many as a trace file claims (values_shape
    # [2**63-1, 0] holds no value: no row to build).
    rows = min(rows, -(-len(chunk) // cols)) if cols else 0
    return [chunk[r * cols : (r + 1) * cols] for r in range(rows)], slice_index(block, n)


def first_nonfinite(tensor: TensorRecord) -> tuple[int, int, int] | None:
    """(slice, row, column) of the first NaN or ±Inf in the kept block, row-major; None
    when the block holds none (the tensor's may lie past it)."""
    values, block = tensor.values or [], tensor.values_shape or []
    at = next((i for i, v in enumerate(values) if not math.isfinite(v)), None)
    if at is None:
        return None
    if len(block) < 2:
        return 0, 0, at
    rows, cols = block[-2], block[-1]
    per = rows * cols
    return at // per, at % per // cols, at % cols


def cell(value: float) -> Text:
    if math.isnan(value):
        return Text("nan", style="bold red", justify="right")
    if math.isinf(value):
        return Text("inf" if value > 0 else "-inf", style="bold red", justify="right")
    return Text(number(value), style="dim" if value == 0 else "", justify="right")


class ValuesPane(Vertical):
    ALLOW_MAXIMIZE = True  # `z` zooms the whole pane, not the table inside it
    DEFAULT_CSS = """
    ValuesPane { height: 1fr; }
    ValuesPane > #values-title { height: auto; padding: 0 1; color: $text-muted; }
    ValuesPane > ValuesGrid { height: 1fr; }
    """

    def __init__(self, tensor: TensorRecord | None = None, slice_no: int = 0, **kwargs) -> None:
        super().__init__(**kwargs)
        self._composed = False  # children exist (is_mounted is set only after on_mount)
        self._drawn: tuple[int, int] | None = None  # (id of the tensor, slice) the grid holds
        self._per_row = 0  # values a row of a wrapped vector holds (0: not wrapped)
        self._shown_width = 0  # the width a vector was wrapped for
        self._stale = False  # held (`hold`) and not drawn yet
        self._point_pending = False  # point_at_first_nonfinite asked while held: done when drawn
        self.tensor = tensor
        self.slice_no = slice_no

    def compose(self) -> ComposeResult:
        yield LineStatic(id="values-title")  # one line drawn without the Content pipeline
        yield ValuesGrid(id="values-table")

    def on_mount(self) -> None:
        self._composed = True
        self._stale = True
        self.up_to_date()

    def hold(self, tensor: TensorRecord | None, slice_no: int = 0) -> None:
        """Take `tensor` (and slice) without drawing it: the pane is behind another tab.
        `slices` and `slice_no` are those of `tensor` at once; `up_to_date` draws it when
        the pane is shown or read."""
        if tensor is not self.tensor:
            self._point_pending = False
        self.tensor = tensor
        count = self.slices
        self.slice_no = max(0, min(slice_no, count - 1)) if count else 0
        self._stale = True

    def up_to_date(self) -> ValuesPane:
        """This pane, its title and grid drawn for the tensor it was last given."""
        if self._stale and self._composed:
            point = self._point_pending
            self.show(self.tensor, self.slice_no)
            if point:
                self.point_at_first_nonfinite()
        return self

    def on_show(self) -> None:
        self.up_to_date()

    @property
    def slices(self) -> int:
        if self._live() is not None:
            return math.prod(self.tensor.shape[:-2])  # a live tensor is a dense one (see _live)
        return slice_count(self.tensor)

    def _live(self):
        tensor = self.tensor
        if not self._composed or tensor is None or tensor.values_shape is None or len(tensor.shape or []) <= 2:
            return None
        if tensor.layout is not None:
            return None  # a nested or sparse tensor's slices are not its stored values': the kept block only
        if math.prod(tensor.shape[:-2]) <= slice_count(tensor):
            return None  # every slice was kept
        return live_tensor(self.app, tensor)

    def step_slice(self, delta: int, outer: bool = False) -> None:
        count = self.slices
        live = self._live() is not None
        past_end = not 0 <= self.slice_no + delta < count
        if past_end and not live and self._composed and (message := unkept_slices_text(self.tensor)):
            self.notify(message, severity="warning")  # never a silent no-op
        if count <= 1 or self.tensor is None or self.tensor.values_shape is None:
            return
        if outer:
            dims = self.tensor.shape if live else self.tensor.values_shape
            delta *= math.prod(dims[1:-2]) or 1
        self.show(self.tensor, (self.slice_no + delta) % count)

    def show(self, tensor: TensorRecord | None, slice_no: int = 0) -> None:
        # The same tensor and slice drawn again (a redraw of the same firing) keeps the cursor.
        same = tensor is not None and self._drawn == (id(tensor), slice_no)
        kept = self.query_one(ValuesGrid).cursor_coordinate if same else None
        self._drawn = None
        self._stale = self._point_pending = False
        self.tensor = tensor
        count = self.slices
        self.slice_no = max(0, min(slice_no, count - 1)) if count else 0
        if not self._composed:
            return  # on_mount shows it
        title = self.query_one("#values-title", LineStatic)
        table = self.query_one(ValuesGrid)
        self.remove_class("-roomy")  # no grid, no room wanted: set again below for one
        if tensor is None:
            table.clear()
            table.display = False  # set only when it changes: each change lays the screen out again
            set_text(title, Text("no tensor selected"))
            return
        if tensor.is_missing:
            table.clear()
            table.display = False
            set_text(title, Text(f"{tensor.name}: None ({tensor.missing or 'no value'})", style="yellow"))
            return
        values = tensor.values
        if values is None or tensor.values_shape is None:
            table.clear()
            table.display = False
            # Text, never a markup string: names come from the record (`x[/]` is a fine tensor name).
            set_text(title, Text(f"{tensor.name} {shape_text(tensor)}: no values kept" + (f" ({tensor.note})" if tensor.note else "")))
            return
        live = self._live()
        if live is not None:
            shown = live_slice(tensor, live, self.slice_no)
            rows, _ = grid(shown, 0)
            lead = slice_index(list(tensor.shape[:-2]) + [0, 0], self.slice_no)
        else:
            shown = None
            rows, lead = grid(tensor, self.slice_no)
        table.display = True
        set_text(title, self._title(tensor, lead, count, None if shown is None else shown.values_shape[-2:]))
        cells = [[cell(v) for v in row] for row in rows]
        row_labels = stored_row_labels(tensor) if live is None else None
        self._want_room(cells)
        column_labels = None
        self._per_row = 0
        vector = len((shown or tensor).values_shape or []) == 1
        if vector and row_labels is None and len(cells) == 1 and (per_row := self._fitting(cells[0])) < len(cells[0]):
            # A vector wrapped into rows of what fits (a (16,) gradient was cut after 5 values):
            # rows named by the index they start at, columns by the offset in the row.
            self._per_row, flat = per_row, cells[0]
            cells = [flat[i : i + per_row] for i in range(0, len(flat), per_row)]
            row_labels = [str(i) for i in range(0, len(flat), per_row)]
            column_labels = [f"+{c}" for c in range(per_row)]
        table.fill(cells, row_labels=row_labels, column_labels=column_labels)
        self._drawn = (id(tensor), self.slice_no)
        if kept is not None:
            table.move_cursor(row=kept.row, column=kept.column)

    def _want_room(self, cells: list[list[Text]]) -> None:
        """Beside Explain (wide layouts): ask for 60% of the width where the grid, unwrapped,
        is cut at 40% (lower.py's CSS)."""
        if getattr(self.parent, "id", None) != "wide-bottom":  # lower.py's wide layout
            return
        columns = max((len(row) for row in cells), default=0)
        wanted = len(str(len(cells))) + 2 + sum(max((row[c].cell_len for row in cells if c < len(row)), default=1) + 2 for c in range(columns))
        self.set_class(wanted + 2 > self.parent.size.width * 4 // 10, "-roomy")

    def _fitting(self, row: list[Text]) -> int:
        """How many of these cells fit across the grid (all of them before it has a size)."""
        width = self.query_one(ValuesGrid).size.width or self.size.width
        self._shown_width = self.size.width
        if width <= 0 or not row:
            return len(row)
        cell_width = max(c.cell_len for c in row) + 2
        label_width = len(str(len(row) - 1)) + 2
        return max(1, (width - label_width - 1) // cell_width)  # 1: the scrollbar

    def on_resize(self, _event) -> None:
        # A vector's rows are cut to the width: a new width, new rows.
        tensor = self.tensor
        if self._composed and tensor is not None and len(tensor.values_shape or []) == 1 and self.size.width != self._shown_width:
            self.show(tensor, self.slice_no)

    def point_at_first_nonfinite(self) -> None:
        """Show the slice holding the first NaN/Inf of the kept block, the cursor on it."""
        tensor = self.tensor
        if tensor is None or tensor.is_missing or self._live() is not None:
            return  # slices shown live from the tensor: the block's numbering does not apply
        found = first_nonfinite(tensor)
        if found is None:
            return
        slice_no, row, column = found
        if self._stale:  # not drawn: the slice now, the cursor when drawn (up_to_date)
            self.slice_no, self._point_pending = slice_no, True
            return
        if slice_no != self.slice_no:
            self.show(tensor, slice_no)
        if self._per_row:  # a vector wrapped into rows
            row, column = column // self._per_row, column % self._per_row
        if self._composed:
            self.query_one(ValuesGrid).move_cursor(row=row, column=column + 1)  # column 0: the row indices

    def _title(self, tensor: TensorRecord, lead: list[int], count: int, live_grid: list[int] | None = None) -> Text:
        text = Text()
        text.append(tensor.name, "bold")
        if tensor.target:  # the whole label, which the Tensors pane may have cut
            text.append(f" → {tensor.target}")
        text.append(f" {shape_text(tensor)} {tensor.dtype or ''}")
        if lead:
            text.append("  slice [" + ", ".join(str(i) for i in lead) + ", :, :]", "bold")
            if count > 1:
                text.append(f" {self.slice_no + 1}/{count} ([ ] {{ }})", "dim")
        if (laid_out := layout_text(tensor)) is not None:
            text.append("\n" + laid_out, "italic")
        if live_grid is not None:
            text.append(f"\nlive tensor: the first {dims_text(live_grid)} of each slice", "italic")
        elif unkept := unkept_slices_text(tensor):
            text.append("\n" + unkept, "italic")  # `[` `]` stop at the kept block: say why
        elif not tensor.values_complete:
            text.append(f"\nshowing the first {dims_text(tensor.values_shape or [])} of {stored_text(tensor)}", "italic")
        return text
