"""The UI's plain helpers, without an app: history navigation, formatting, paths."""

from __future__ import annotations

import os

from hooktui.engine.analysis.breakpoints import Breakpoint, BreakpointList
from hooktui.engine.records.records import Event, TensorRecord, TensorStats
from hooktui.ui.history import History
from hooktui.ui.paths import display_path, user_traceback
from hooktui.ui.widgets.autograd import seq_text
from hooktui.ui.widgets.tensors import loudness, sparkline, tensor_name
from hooktui.ui.widgets.timeline import nonfinite
from hooktui.ui.widgets.values import grid, slice_count, slice_index


def _event(i: int, phase: str, module: str, hook: str | None = None) -> Event:
    return Event(index=i, phase=phase, hook=hook or phase, module=module, module_type="M", call=0)


def listed(*bps):
    found = BreakpointList()
    for bp in bps:
        found.add(bp)
    return found


def test_history_follows_and_finds_stops():
    history = History()
    history.extend([_event(0, "forward", ""), _event(1, "forward", "a")])
    assert history.cursor == 1 and history.at_latest
    history.move(0)
    history.follow = False
    history.extend([_event(2, "forward", "b"), _event(3, "backward", "b"), _event(4, "backward", "a")])
    assert history.cursor == 0  # not following: stays put
    def stops_at(*bps, backward=False):
        found = history.find_stop(listed(*bps), backward)
        return None if found is None else found[0]

    assert stops_at(Breakpoint.on_module("b")) == 2
    assert stops_at(Breakpoint.on_module("a", "backward")) == 4
    assert stops_at(backward=True) == 3
    assert stops_at(Breakpoint.on_module("zzz")) is None
    assert history.find_stop(listed(Breakpoint.on_module("b")), False)[1].breakpoint == Breakpoint.on_module("b")
    assert history.visited("b", "forward", 2) and not history.visited("b", "forward", 1)
    assert history.visited("a", "backward", 4) and not history.visited("a", "backward", 3)
    assert history.per_phase == {"forward": 3, "backward": 2}


def test_the_run_totals_count_what_the_timeline_shows():
    """The summary's "N forward + M backward firings" adds up to the timeline's rows: hidden
    legacy firings (numbered, not shown) are left out until L shows them."""
    history = History()
    history.hidden = {"legacy_backward"}
    history.extend([_event(0, "forward", "a"), _event(1, "backward", "a", "legacy_backward"), _event(2, "backward", "a")])
    assert history.shown_per_phase() == {"forward": 1, "backward": 1}
    history.hidden.clear()
    assert history.shown_per_phase() == {"forward": 1, "backward": 2} == history.per_phase


def test_sparkline_scales_to_the_fullest_bin():
    assert sparkline([0, 1, 2, 4, 8]) == " ▁▂▄█"
    assert sparkline([]) == "" and sparkline([0, 0]) == "  "


def test_loud_tensors_and_names():
    nan = TensorRecord("x", [2], stats=TensorStats(count=2, finite=1, nan=1))
    zeros = TensorRecord("y", [2], stats=TensorStats(count=2, finite=2, zeros=2))
    missing = TensorRecord("grad_input[0]", None, missing="no grad", target="args[0]")
    assert loudness(nan) == "error" and loudness(zeros) == "warning" and loudness(missing) == "warning"
    assert tensor_name(missing) == "grad_input[0] → args[0]"
    assert nonfinite(Event(0, "forward", "forward", "", "M", 0, tensors=[zeros, nan])) == "NaN"


def test_value_slices_of_a_kept_block():
    tensor = TensorRecord("x", [2, 3, 4, 5], values=[float(i) for i in range(120)], values_shape=[2, 3, 4, 5])
    assert slice_count(tensor) == 6
    assert slice_index([2, 3, 4, 5], 4) == [1, 1]
    rows, lead = grid(tensor, 4)
    assert lead == [1, 1] and rows[0][0] == 80.0 and len(rows) == 4 and len(rows[0]) == 5
    vector = TensorRecord("v", [3], values=[1.0, 2.0, 3.0], values_shape=[3])
    assert grid(vector, 0) == ([[1.0, 2.0, 3.0]], [])


def test_paths_do_not_depend_on_the_checkout():
    assert display_path(os.path.join(os.getcwd(), "sample_models", "cnn.py")) == os.path.join("sample_models", "cnn.py")
    assert display_path("/somewhere/else/model.py") == "model.py"
    assert display_path("/x/lib/python3.11/site-packages/torch/nn/modules/conv.py") == "torch/nn/modules/conv.py"


def test_user_traceback_keeps_the_users_frames():
    traceback = (
        "Traceback (most recent call last):\n"
        '  File "/x/site-packages/torch/autograd/function.py", line 3, in apply\n'
        "    return f()\n"
        "           ^^^\n"
        f'  File "{os.getcwd()}/model.py", line 7, in backward\n'
        '    raise RuntimeError("boom")\n'
        "RuntimeError: boom\n"
    )
    text, skipped = user_traceback(traceback)
    assert skipped == 1
    assert text.splitlines() == [
        "Traceback (most recent call last):",
        '  File "model.py", line 7, in backward',
        '    raise RuntimeError("boom")',
        "RuntimeError: boom",
    ]


def test_sequence_numbers_of_nodes_without_one():
    assert seq_text(None) == "-" and seq_text(2**64 - 1) == "-" and seq_text(7) == "7"


def test_history_skips_hidden_kinds():
    history = History()
    history.extend([_event(0, "backward", "a"), _event(1, "backward", "a", "legacy_backward"), _event(2, "backward", "b"),
                    _event(3, "backward", "b", "legacy_backward")])
    history.hidden = {"legacy_backward"}
    assert history.latest == 2
    assert history.next_visible(0, 1) == 2 and history.next_visible(2, -1) == 0
    assert history.next_visible(2, 1) is None
    history.move(2)
    assert history.at_latest
    history.hidden = set()
    assert history.latest == 3 and not history.at_latest
