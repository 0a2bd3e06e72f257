"""The overview screen (`w`): one row per module call, live while the model runs, Enter
and `j` jump to a call's firings, and only the rows on screen are ever computed."""

from __future__ import annotations

import re
import threading

import pytest
import torch
from torch import nn

from hooktui.engine.records.records import Event, ModuleInfo, TensorRecord, TensorStats, TraceInfo
from hooktui.engine.run.loader import load_target
from hooktui.engine.run.session import Session, record
from hooktui.ui.app import HooktuiApp
from hooktui.ui.sources import LiveSource
from hooktui.ui.keys import key_help
from hooktui.ui.screens.overview import OverviewScreen
from hooktui.ui.widgets.overview import OverviewRows, bar, bar_level, short_number

from ui_helpers import SAMPLES, paused_at, paused_at_start, run, sample_app, wait_for


def screen_rows(app) -> list[str]:
    return ["".join(segment.text for segment in strip) for strip in app.screen._compositor.render_strips()]


def overview(app) -> OverviewRows:
    assert isinstance(app.screen, OverviewScreen)
    return app.screen.query_one(OverviewRows)


def test_w_opens_the_overview_and_it_is_in_help_and_the_palette():
    app = sample_app("cnn.py")

    async def script():
        async with paused_at_start(app) as pilot:
            assert any(action == "overview" and keys == "w" for keys, _, action in key_help(app))
            assert any("Overview" in str(c.title) for c in app.get_system_commands(app.screen))
            await pilot.press("w")
            await wait_for(pilot, lambda: isinstance(app.screen, OverviewScreen), "the overview")
            await pilot.press("c")
            await wait_for(pilot, lambda: app.state == "finished", "the end of the run")
            await pilot.pause()
            # One row per module call: every module of the CNN is called once.
            model = __import__("hooktui.engine.run.loader", fromlist=["load_target"]).load_target(SAMPLES / "cnn.py").model
            names = ["(root)" if not n else n for n, _ in model.named_modules()]
            rows = overview(app).calls.rows
            assert [r.module or "(root)" for r in rows] == names
            # Every call got its backward; the text says so at 80 columns.
            assert all(r.backward_pre is not None for r in rows)
            text = "\n".join(screen_rows(app))
            assert "finished" in text and "features.4" in text and "∇ output" in text
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, OverviewScreen)
            await pilot.press("w")
            await pilot.pause()
            await pilot.press("w")  # w closes it too
            await pilot.pause()
            assert not isinstance(app.screen, OverviewScreen)

    run(script())


def test_enter_and_j_jump_to_the_selected_calls_firings():
    app = sample_app("cnn.py")

    async def script():
        async with paused_at_start(app) as pilot:
            await pilot.press("c")
            await wait_for(pilot, lambda: app.state == "finished", "the end of the run")
            events = app.history.events
            forward_pre = next(i for i, e in enumerate(events) if e.hook == "forward_pre" and e.module == "features.4")
            backward_pre = next(i for i, e in enumerate(events) if e.hook == "backward_pre" and e.module == "features.4")
            await pilot.press("w")
            await wait_for(pilot, lambda: isinstance(app.screen, OverviewScreen), "the overview")
            rows = overview(app)
            await pilot.press("home", *["down"] * 6)  # (root), features, features.0 ... features.4
            assert rows.selected_row.module == "features.4"
            assert not rows.follow
            await pilot.press("enter")
            await wait_for(pilot, lambda: not isinstance(app.screen, OverviewScreen), "the main screen")
            assert app.history.cursor == forward_pre
            await pilot.press("w")
            await wait_for(pilot, lambda: isinstance(app.screen, OverviewScreen), "the overview")
            # The selection follows the current firing's row, marked ▶.
            assert overview(app).selected_row.module == "features.4"
            assert any(line.startswith("▶") and "features.4" in line for line in screen_rows(app))
            await pilot.press("j")
            await wait_for(pilot, lambda: not isinstance(app.screen, OverviewScreen), "the main screen")
            assert app.history.cursor == backward_pre

    run(script())


class Waits(nn.Module):
    """Blocks in forward until the test lets it go: the run is then 'running' for sure."""

    def __init__(self, release: threading.Event, reached: threading.Event):
        super().__init__()
        self.release, self.reached = release, reached

    def forward(self, x):
        self.reached.set()
        self.release.wait(20)
        return x * 1.0


def test_the_overview_grows_while_the_model_runs():
    release, reached = threading.Event(), threading.Event()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), Waits(release, reached), nn.Linear(4, 2))
    app = HooktuiApp(LiveSource(Session(model, torch.ones(2, 4))), show_timings=False)

    async def script():
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            try:
                await paused_at(pilot, 0)
                await pilot.press("w")
                await wait_for(pilot, lambda: isinstance(app.screen, OverviewScreen), "the overview")
                await pilot.press("c")
                await wait_for(pilot, reached.is_set, "the model to block")
                rows = overview(app)
                # Still running: the rows before the blocked call are there already.
                await wait_for(pilot, lambda: len(rows.calls) == 4, "the rows so far")
                assert app.state == "running"
                assert [r.module for r in rows.calls.rows] == ["", "0", "1", "2"]
                assert "running" in screen_rows(app)[0]
            finally:
                release.set()
            await wait_for(pilot, lambda: app.state == "finished", "the end of the run")
            await wait_for(pilot, lambda: len(rows.calls) == 5 and all(r.backward_pre is not None for r in rows.calls.rows), "backward")
            assert "finished" in screen_rows(app)[0]

    run(script())


def synthetic(calls: int) -> tuple[TraceInfo, list[Event]]:
    """A recorded run of `calls` module calls: forward_pre, forward, then backward."""
    stats = TensorStats(count=4, finite=4, min=0.0, max=1.0, mean=0.5, std=0.5, absmax=1.0, norm=1.2)
    tensor = TensorRecord(name="output", shape=[2, 2], dtype="float32", device="cpu", stats=stats)
    grad = TensorRecord(name="grad_output[0]", shape=[2, 2], dtype="float32", device="cpu", stats=stats)
    names = [f"layers.{i}" for i in range(calls)]
    # The module tree is not what is measured: one container stands for the layers.
    info = TraceInfo(model="Synthetic", modules=[ModuleInfo("", "Net"), ModuleInfo("layers", "ModuleList")], loss="none")
    events = []
    for name in names:
        events.append(Event(len(events), "forward", "forward_pre", name, "Linear", 0))
        events.append(Event(len(events), "forward", "forward", name, "Linear", 0, tensors=[tensor]))
    for name in reversed(names):
        events.append(Event(len(events), "backward", "backward_pre", name, "Linear", 0, tensors=[grad]))
    return info, events


def test_5000_calls_compute_only_the_rows_on_screen():
    app = HooktuiApp(recorded=synthetic(5000), show_timings=False)

    async def script():
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            await pilot.pause()
            await pilot.press("w")
            await wait_for(pilot, lambda: isinstance(app.screen, OverviewScreen), "the overview")
            await pilot.pause()
            rows = overview(app)
            assert len(rows.calls) == 5000
            visible = rows.scrollable_content_region.height - 1
            assert 0 < rows.numbers_read <= visible
            before = rows.numbers_read
            await pilot.press("end")
            await pilot.pause()
            assert rows.selected_row.module == "layers.4999"
            assert "layers.4999" in "\n".join(screen_rows(app))
            assert rows.numbers_read - before <= visible
            # Drawn rows are cached: a repaint reads nothing again.
            before = rows.numbers_read
            rows.refresh()
            await pilot.pause()
            assert rows.numbers_read == before

    run(script())


def test_nan_rows_are_flagged_by_text_and_the_selection_by_reverse_video():
    """NO_COLOR leaves glyphs and attributes: NaN!/Inf! are words, the focused selection is
    reversed, the current call is ▶."""
    app = sample_app("nan.py")

    async def script():
        async with paused_at_start(app) as pilot:
            await pilot.press("c")
            await wait_for(pilot, lambda: app.state == "finished", "the end of the run")
            await pilot.press("w")
            await wait_for(pilot, lambda: isinstance(app.screen, OverviewScreen), "the overview")
            await pilot.pause()
            lines = screen_rows(app)
            flagged = {line[1:5].strip(): line[6:].split()[0] for line in lines[4:] if line[1:5].strip()}
            assert flagged.get("NaN!") in ("encoder", "sq_dist")
            assert any(line[1:5] == "Inf!" and "sqrt" in line for line in lines)
            # Where every gradient of the encoder's parameters is NaN (plain torch says which
            # call's row holds them), the cell is the flag and a hatch, not the flag alone.
            loaded = load_target(SAMPLES / "nan.py")
            loaded.loss_fn(loaded.model(*loaded.inputs)).backward()
            encoder = loaded.model.encoder
            assert all(p.grad.isnan().all() for p in encoder.parameters())
            last_call = next(line for line in lines if line.split()[1:3] == ["encoder", "1"])
            assert re.search(r"NaN! ▚{3,}\s*$", last_call), last_call
            strips = app.screen._compositor.render_strips()
            selected = overview(app).selected
            y = next(i for i, line in enumerate(lines) if line.startswith("▶"))
            assert selected == overview(app).current
            assert any(seg.style is not None and seg.style.reverse for seg in strips[y])
            assert not any(seg.style is not None and seg.style.reverse for seg in strips[y + 1] if seg.text.strip())

    run(script())


def test_bars_are_log_scaled_and_fixed():
    # 1e-8 .. 1e4 over the width: each decade is the same length, 1e-2 is half way.
    assert bar_level(1e-2, 8) == 32 and bar_level(1e4, 8) == 64 and bar_level(1e9, 8) == 64
    assert bar_level(1e-20, 8) == 1  # a tiny gradient is not nothing
    assert bar_level(0.0, 8) == 0 and bar_level(None, 8) == 0 and bar_level(float("nan"), 8) == 0
    assert bar(1e-2, 8) == "████    "
    assert bar(1e-2, 8, light=1e1) == "████░░  "
    assert short_number(3.14159e-5) == "3.1e-5" and short_number(0.0) == "0" and short_number(None) == "None"


@pytest.mark.parametrize(
    "value, text",
    [(float("-inf"), "-inf"), (float("inf"), "inf"), (float("nan"), "nan"), (-1.0e308, "-1e308"), (1.0e308, "1.0e308"),
     (-2.5e-5, "-2.5e-5"), (0.0, "0")],
)
def test_short_number_fits_its_column_and_keeps_the_sign(value, text):
    """An absmax of -inf (a trace file's) is -inf, not inf; -1.0e308 fits the 7 cells (issue 24)."""
    from hooktui.ui.widgets.overview import NUMBER, short_number

    assert short_number(value) == text and len(text) <= NUMBER


def test_a_root_returning_a_dict_shows_its_output_gradient_not_none():
    """Issue 25.11: the overview said `∇ output None` for transformer.py's root (a dict)."""
    loaded = load_target(SAMPLES / "transformer.py")
    trace = record(loaded.model, loaded.inputs, loaded.loss_fn)

    async def script():
        app = HooktuiApp(recorded=(trace.info, trace.events), show_timings=False)
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            app.goto(len(trace.events) - 1, follow=False)
            await pilot.press("w")
            await wait_for(pilot, lambda: isinstance(app.screen, OverviewScreen), "the overview")
            await pilot.pause()
            rows = screen_rows(app)
            root = next(r for r in rows if "(root)" in r and "0  " in r)
            assert "None" not in root and "∇ output" in " ".join(rows), rows

    run(script())
