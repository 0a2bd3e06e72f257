"""What a new user tripped over (issue 12, D): the filter shows what is typed, the most
important facts survive 80x24, a firing has one number everywhere, the Source pane of a
param_grad firing shows the user's call, forward rows show the output's shape, the Explain
pane does not name another call's hook, and keys that cannot act say why."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import hooktui
from hooktui.engine.run.loader import load_target
from hooktui.explain import explain
from hooktui.ui.app import HooktuiApp
from hooktui.ui.widgets.module_tree import fit_type
from hooktui.ui.widgets.source_view import call_site
from hooktui.ui.widgets.status import StatusInfo, status_text
from hooktui.ui.widgets.timeline import Timeline, main_shape

from test_ui_hostile import screen_text
from ui_helpers import SAMPLES, paused_at_start, run, sample_app, wait_for


def run_cli(*args) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    return subprocess.run([sys.executable, "-m", "hooktui", *map(str, args)], capture_output=True, text=True, env=env, timeout=180)


def _recorded(name: str, **kwargs):
    loaded = load_target(SAMPLES / name)
    return hooktui.record(loaded.model, loaded.inputs, loaded.loss_fn, **kwargs)


def test_the_filter_box_shows_the_text_as_it_is_typed():
    app = sample_app("seed.py")

    async def script():
        async with paused_at_start(app) as pilot:
            await pilot.press("ampersand", "f", "c", "2")
            await pilot.pause()
            assert "fc2" in screen_text(app).split("\t")[1]  # the filter row, before enter

    run(script())


def test_status_line_keeps_the_important_facts_and_cuts_no_part():
    trace = _recorded("nan.py")
    event = next(e for e in trace.events if e.hook == "backward" and any(t.stats and t.stats.nan for t in e.tensors))
    info = StatusInfo("paused", event, 10, 40, True, loss="loss_fn(output) from a_long_model_file_name.py",
                      summary="12 forward + 20 backward firings, 9 modules", wall_time=0.52)
    for width in (60, 80, 120, 200):
        text = status_text(info, width).plain
        assert len(text) <= width
        for fact in (f"#{event.index}", event.module, f"call {event.call}", event.hook, "NaN!"):
            assert fact in text, (width, text)
        assert "loss:" not in text or text.endswith(info.loss)  # whole or not at all
    wide = status_text(info, 300).plain
    assert "ran 0.52 s" in wide and wide.index("ran 0.52 s") < wide.index("loss:")


def test_timeline_keeps_call_and_flags_at_80_columns():
    trace = _recorded("nan.py")
    app = HooktuiApp(recorded=(trace.info, trace.events), show_timings=False)
    position = next(i for i, e in enumerate(trace.events) if any(t.stats and t.stats.nan for t in e.tensors))

    async def script():
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            await pilot.pause()
            columns = [key for key, _ in app.query_one(Timeline)._columns]
            assert {"index", "hook", "module", "call", "flag"} <= set(columns)
            app.goto(position, follow=False)
            await pilot.pause()
            assert "NaN!" in screen_text(app)

    run(script())


def test_a_firing_has_the_same_number_in_the_app_and_in_trace():
    """The app records legacy firings hidden; `trace` records them too and leaves them out,
    so that the numbers agree (issue 12, D16)."""
    result = run_cli("trace", SAMPLES / "seed.py", "--json")
    assert result.returncode == 0, result.stderr
    printed = [(d["index"], d["hook"], d["module"], d["call"]) for d in map(json.loads, result.stdout.splitlines())]
    app = sample_app("seed.py", legacy=False)  # plain `hooktui`: legacy recorded, hidden

    async def script():
        async with paused_at_start(app) as pilot:
            await pilot.press("c")
            await wait_for(pilot, lambda: app.state == "finished", "the end")
            shown = [(e.index, e.hook, e.module, e.call) for e in app.history.events if e.hook not in app.history.hidden]
            assert shown == printed

    run(script())


def test_param_grad_source_is_the_users_call():
    trace = _recorded("seed.py")
    grad = next(e for e in trace.events if e.hook == "param_grad")
    assert "torch" in (grad.source.filename if grad.source else "torch")  # recorded inside torch
    site = call_site(grad, trace.events)
    assert site is not None and site.filename.endswith("seed.py")


def test_forward_rows_show_the_output_shape():
    trace = _recorded("cnn.py")
    head = next(e for e in trace.events if e.hook == "forward" and e.module == "head")
    assert main_shape(head) == "(1, 10)"  # Linear(16, 10): the input would be (1, 16)


def test_explain_names_every_call_of_a_shared_cell():
    trace = _recorded("rnn.py")
    grad = next(e for e in trace.events if e.hook == "param_grad" and e.module == "cell")
    text = " ".join(s.text for s in explain(grad, trace.events, trace.info))
    backwards = [e for e in trace.events if e.hook == "backward" and e.module == "cell"]
    assert len(backwards) == 4
    for backward in backwards:
        assert f"#{backward.index} (call {backward.call})" in text
    assert "The module's full backward hook fired" not in text  # never one call's as "the" hook


@pytest.mark.parametrize("key, says", [("j", "a forward firing has no other side"), ("e", "no error")])
def test_keys_that_cannot_act_say_why(key, says):
    app = sample_app("seed.py")
    notes = []

    async def script():
        async with paused_at_start(app) as pilot:
            await pilot.press(key)
            await pilot.pause()
            notes.extend(n.message for n in app._notifications)

    run(script())
    assert any(says in note for note in notes), notes


def test_the_palette_lists_quit_once():
    app = sample_app("seed.py")

    async def script():
        async with paused_at_start(app):
            titles = [str(c.title) for c in app.get_system_commands(app.screen)]
            assert sum(t.lower().startswith("quit") for t in titles) == 1, titles

    run(script())


def test_long_type_names_are_cut_at_a_word_or_left_out():
    assert fit_type("NonDynamicallyQuantizableLinear", 17) == "NonDynamically…"
    assert fit_type("Linear", 17) == "Linear"
    assert fit_type("Sequential", 5) == ""  # not `Sequ…`: the module's name is enough
    assert fit_type("MultiheadAttention", 9) == ""
    assert fit_type("MultiheadAttention", 10) == "Multihead…"
    assert fit_type("NonDynamicallyQuantizableLinear", 13) == ""  # not `Non…`


def test_view_opens_json_output(tmp_path):
    """`hooktui view` accepts a `trace --json` output: it holds the same records."""
    from hooktui.engine.records.trace_file import read_trace_file

    result = run_cli("trace", SAMPLES / "seed.py", "--json")
    path = tmp_path / "run.jsonl"
    path.write_text(result.stdout)
    loaded = read_trace_file(path)
    assert [e.index for e in loaded.events] == [json.loads(line)["index"] for line in result.stdout.splitlines()]
    assert {m.name for m in loaded.info.modules} == {"", "fc1", "fc2"}


def test_focus_is_shown_by_shape_not_only_colour():
    """With NO_COLOR only glyphs and attributes are left: the focused pane must still show."""
    app = sample_app("seed.py")

    def header_reversed() -> bool:
        strip = app.screen._compositor.render_strips()[1]
        return any(seg.style is not None and seg.style.reverse and "#" in seg.text for seg in strip)

    async def script():
        async with paused_at_start(app) as pilot:
            assert app.focused.id == "timeline"
            rows = screen_text(app).split("\t")
            assert header_reversed() and "▐" not in rows[1]
            await pilot.press("shift+tab")
            await pilot.pause()
            assert app.focused.id == "tree"
            rows = screen_text(app).split("\t")
            assert not header_reversed() and "▐" in rows[1]

    run(script())


def test_one_module_is_not_modules():
    """`(1 modules, ...` in trace's header and the run's totals."""
    from hooktui.commands.table import format_header
    from hooktui.engine.records.records import ModuleInfo, TraceInfo

    one = TraceInfo("one.py", [ModuleInfo("", "Linear")], "sum")
    two = TraceInfo("two.py", [ModuleInfo("", "Sequential"), ModuleInfo("0", "Linear")], "sum")
    assert "(1 module, cpu" in format_header(one)
    assert "(2 modules, cpu" in format_header(two)
    app = HooktuiApp(recorded=(one, []))
    assert app.summary(with_time=False).endswith(" firings, 1 module")


def test_a_long_stop_reason_is_cut_to_fit_not_left_out():
    """A `--break-if` expression on a deep module at 80 columns: the stop's reason was left out
    whole; its beginning must show (cut with …), after the facts that always show."""
    from hooktui.engine.analysis.breakpoints import Breakpoint, Stop

    trace = _recorded("cnn.py")
    event = next(e for e in trace.events if e.hook == "backward_pre" and e.module.count(".") >= 1)
    expression = "grad_output[0].norm() / (grad_output[0].numel() ** 0.5) > 1e-3 and module.training"
    stop = Stop(event.index, Breakpoint.condition(expression), "true")
    info = StatusInfo("paused", event, 10, 40, False, loss="sum", stop=stop)
    for width in (60, 80):
        text = status_text(info, width).plain
        assert len(text) <= width, text
        assert f"#{event.number}" in text and event.hook in text
        assert "■ if grad_o" in text and text.rstrip().endswith("…"), (width, text)
    assert f"■ if {expression}" in status_text(info, 200).plain
