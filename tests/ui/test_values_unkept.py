"""Issue 12, item 19: `[` / `]` past the kept block of values says so instead of doing nothing."""

from hooktui.engine.records.records import TensorRecord
from hooktui.ui.widgets.values import unkept_slices_text


def test_a_partly_kept_activation_says_only_the_first_block_was_kept():
    activation = TensorRecord("output", [1, 3, 32, 32], values=[0.0] * 1024, values_shape=[1, 1, 32, 32])
    text = unkept_slices_text(activation)
    assert text is not None and "1×1×32×32" in text and "(1, 3, 32, 32)" in text and "not kept at this firing" in text


def test_nothing_to_say_when_every_slice_was_kept_or_there_are_no_slices():
    whole = TensorRecord("x", [2, 3, 4], values=[0.0] * 24, values_shape=[2, 3, 4])
    matrix = TensorRecord("w", [64, 64], values=[0.0] * 1024, values_shape=[32, 32])  # one 2-D slice: the grid says how much
    no_values = TensorRecord("x", [2, 3, 4])
    assert unkept_slices_text(whole) is None and unkept_slices_text(matrix) is None
    assert unkept_slices_text(no_values) is None and unkept_slices_text(None) is None


def test_paused_live_tensor_shows_every_slice_and_a_trace_file_says_what_was_kept():
    """Issue 12, item 19, in the app: cnn.py's input (1, 3, 32, 32) keeps one 32x32 block."""
    from ui_helpers import paused_at_start, run, sample_app

    from hooktui.engine.records.format import number
    from hooktui.ui.app import HooktuiApp
    from hooktui.ui.widgets.values_grid import ValuesGrid

    app = sample_app("cnn.py")
    x = app.source.session.args[0]

    async def live():
        async with paused_at_start(app, size=(120, 40)) as pilot:
            await pilot.press("v")
            values = app.lower.pane("values")
            assert values.tensor.shape == [1, 3, 32, 32] and values.tensor.values_shape == [1, 1, 32, 32]
            assert values.slices == 3  # every channel, though only the first was kept
            await pilot.press("right_square_bracket", "right_square_bracket")  # channel 2
            await pilot.pause()
            table = values.query_one(ValuesGrid)
            assert values.slice_no == 2 and table.row_count == 32
            row = [str(table.get_cell_at((0, c))).strip() for c in range(1, 33)]
            assert row == [number(v) for v in x[0, 2, 0, :32].tolist()]
            assert "live tensor" in str(values.query_one("#values-title").render())

    run(live())
    # The same firing from a recorded trace (as `hooktui view` shows it): no live tensor.
    recorded = HooktuiApp(recorded=(app.source.session.trace.info, app.source.session.events[:1]))

    async def from_file():
        async with recorded.run_test(size=(120, 40), notifications=False) as pilot:
            await pilot.pause()
            await pilot.press("v")
            values = recorded.lower.pane("values")
            assert values.slices == 1  # `[` `]` are greyed out: the title says why
            title = str(values.query_one("#values-title").render())
            assert "showing the first 1×1×32×32 of (1, 3, 32, 32): the other slices were not kept at this firing" in title

    run(from_file())

