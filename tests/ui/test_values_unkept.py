"""Issue 12, item 19: `[` / `]` past the kept block of values says so instead of doing nothing."""

from hooktui.engine.records import TensorRecord
from hooktui.ui.widgets.values import unkept_slices_text


def test_a_partly_kept_activation_says_only_the_first_block_was_kept():
    activation = TensorRecord("output", [1, 3, 32, 32], values=[0.0] * 1024, values_shape=[1, 1, 32, 32])
    text = unkept_slices_text(activation)
    assert text is not None and "1×1×32×32" in text and "(1, 3, 32, 32)" in text and "not recorded" in text


def test_nothing_to_say_when_every_slice_was_kept_or_there_are_no_slices():
    whole = TensorRecord("x", [2, 3, 4], values=[0.0] * 24, values_shape=[2, 3, 4])
    matrix = TensorRecord("w", [64, 64], values=[0.0] * 1024, values_shape=[32, 32])  # one 2-D slice: the grid says how much
    no_values = TensorRecord("x", [2, 3, 4])
    assert unkept_slices_text(whole) is None and unkept_slices_text(matrix) is None
    assert unkept_slices_text(no_values) is None and unkept_slices_text(None) is None
