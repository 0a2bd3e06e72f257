"""Nested and sparse tensors in `hooktui view` of a saved trace, at 80x24 (issue 31, items 5-6):
the Tensors pane says what the stats are of, the Values pane shows the stored values with
rows named by their sparse index or by component."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))

from screen_text import screen_rows  # noqa: E402
from kinds_models import SparseTables, nested_inputs, nested_model, sparse_index  # noqa: E402
from plain_hooks import seeded  # noqa: E402
from ui_helpers import run  # noqa: E402

import hooktui  # noqa: E402
from hooktui.engine.records.format import number  # noqa: E402
from hooktui.engine.records.trace_file import read_trace_file, write_trace  # noqa: E402
from hooktui.ui.app import HooktuiApp  # noqa: E402
from hooktui.ui.widgets.values_grid import ValuesGrid  # noqa: E402


def saved_app(tmp_path, trace, stop) -> HooktuiApp:
    """The app `hooktui view` opens on the trace saved to a file, at firing `stop`."""
    path = tmp_path / "t.jsonl"
    write_trace(path, dataclasses.replace(trace.info, stopped_at=stop.index), trace.events)
    loaded = read_trace_file(path)
    return HooktuiApp(recorded=(loaded.info, loaded.events), sources=loaded.sources, show_timings=False)


def grid_rows(app) -> list[list[str]]:
    grid = app.lower.pane("values").query_one(ValuesGrid)
    return [[str(grid.get_cell_at((r, c))).strip() for c in range(grid.column_count)] for r in range(grid.row_count)]


def test_a_sparse_gradient_shows_its_rows_by_index(tmp_path):
    model = seeded(SparseTables)()
    grads = {}
    model.emb.weight.register_post_accumulate_grad_hook(lambda p: grads.update(emb=p.grad.coalesce()))
    trace = hooktui.record(model, sparse_index())
    stop = next(e for e in trace.events if e.hook == "param_grad" and e.module == "emb")
    app = saved_app(tmp_path, trace, stop)
    rows = grads["emb"]

    async def script():
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            await pilot.pause()
            assert any("weight.grad" in row and "sparse_coo 4 rows:" in row for row in screen_rows(app))
            await pilot.press("v")
            await pilot.pause()
            screen = "\n".join(screen_rows(app))
            assert "sparse_coo: 4 rows stored (coalesced), rows 1, 2, 3, 7" in screen
            want = [[str(i)] + [number(v) for v in row] for i, row in zip(rows.indices()[0].tolist(), rows.values().tolist())]
            assert grid_rows(app) == want

    run(script())


def test_a_nested_tensor_shows_its_parts(tmp_path):
    trace = hooktui.record(nested_model(), nested_inputs())
    stop = next(e for e in trace.events if e.hook == "forward" and e.module == "enc.layers.0.linear1")
    app = saved_app(tmp_path, trace, stop)
    x = nested_inputs()["x"]

    async def script():
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            await pilot.pause()
            assert any("args[0]" in row and "(2, 5, 8)" in row and "nested 2 parts:" in row for row in screen_rows(app))
            await pilot.press("v")
            await pilot.pause()
            assert "nested: 2 parts (5, 8) (3, 8)" in "\n".join(screen_rows(app))
            labels = [row[0] for row in grid_rows(app)]
            assert labels == ["0:0", "0:1", "0:2", "0:3", "0:4", "1:0", "1:1", "1:2"]
            # linear1's input is the first layer's output: its rows are those of the unpadded samples.
            assert len(grid_rows(app)[5]) == 1 + x.shape[-1]

    run(script())


def test_row_labels_are_bounded_by_the_values_not_by_what_a_file_claims():
    from hooktui.engine.records.records import LayoutRecord, TensorRecord
    from hooktui.ui.widgets.values import layout_text, stored_row_labels

    big = 2**63 - 1
    # Parts that add up to the claimed stored rows, with no value to show: no label built.
    empty = TensorRecord("x", [2, big, 0], values=[], values_shape=[big, 0],
                         layout=LayoutRecord("nested", [big, 0], parts=[[big, 0], [0, 0]]))
    two_rows = TensorRecord("x", [2, big, 3], values=[1.0] * 6, values_shape=[2, 3],
                            layout=LayoutRecord("nested", [big, 3], parts=[[big, 3], [0, 3]]))
    assert stored_row_labels(empty) == []
    assert stored_row_labels(two_rows) == ["0:0", "0:1"]
    assert layout_text(two_rows).startswith("nested: 2 parts")
