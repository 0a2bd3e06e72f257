"""The hunt in the app: `!` then `c` stops at the first NaN/Inf and Explain says where it was
born; the Breakpoints screen (`K`) adds, disables and deletes breakpoints and counts hits;
the console (`:`) evaluates expressions against the live firing and against records.
Expectations come from plain torch in the test, not from the engine."""

import pytest
import torch
from textual import events
from textual.widgets import Static

from hooktui.engine.analysis.breakpoints import Breakpoint, parse_breakpoint
from hooktui.engine.run.loader import load_target
from hooktui.engine.run.session import record
from hooktui.ui.app import HooktuiApp
from hooktui.ui.screens.breakpoints import BreakpointsScreen
from hooktui.ui.screens.console import ConsoleScreen
from hooktui.ui.widgets.explain import ExplainPane
from burst import burst
from ui_helpers import ROOT, SAMPLES, paused_at, paused_at_start, run, sample_app, typed, wait_for


def first_nan_grad(path):
    """With PyTorch's own full backward hooks: the first module (in backward order) whose
    grad_input has a NaN/Inf while its grad_output is finite."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("nan_hunt_plain", path)
    sample = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sample)
    model = sample.build_model()
    found = []

    def bad(grads):
        return any(g is not None and not torch.isfinite(g).all() for g in grads)

    for name, module in model.named_modules():
        module.register_full_backward_hook(lambda m, gi, go, n=name: found.append(n) if bad(gi) and not bad(go) else None)
    sample.loss_fn(model(sample.example_inputs())).backward()
    return found[0]


def test_bang_then_continue_stops_at_the_first_nan_with_where_it_was_born():
    app = sample_app("nan_hunt.py")

    async def script():
        async with paused_at_start(app, size=(120, 40)) as pilot:
            await pilot.press("exclamation_mark")
            assert Breakpoint.nonfinite() in app.source.breakpoints
            await pilot.press("c")
            await wait_for(pilot, lambda: app.state == "paused" and app.history.cursor > 0, "the stop")
            event = app.current
            assert event.hook == "node" and event.grad_fn == "SqrtBackward0"
            assert event.module == first_nan_grad(SAMPLES / "nan_hunt.py")
            assert app.stops[event.key].breakpoint == Breakpoint.nonfinite()
            await pilot.pause()
            explain = app.lower.pane("explain")  # up to date, shown or not
            assert explain.display and explain.is_attached
            text = explain.renderable.renderables[0].plain
            assert text.startswith("■ stopped: NaN/Inf in any tensor: 1 NaN in grad_inputs[0]")
            assert "where it was born" in text and "torch.sqrt(ms)" in text

    run(script())


def test_breakpoints_screen_adds_disables_deletes_and_counts_hits():
    app = sample_app("seed.py")

    async def script():
        async with paused_at_start(app, size=(100, 30)) as pilot:
            await pilot.press("K")
            assert isinstance(app.screen, BreakpointsScreen)
            await pilot.press(*"norm > 1e9")  # typed straight away: the first key starts the input
            await pilot.press("enter")
            await pilot.press("a", *"module fc1 forward", "enter")
            labels = [s.breakpoint.label for s in app.source.breakpoint_list.states()]
            assert labels == ["norm > 1e+09", "module fc1 (forward)"]
            await pilot.press("space")  # the cursor is on the last added... row 0 after refill
            states = app.source.breakpoint_list.states()
            assert [s.enabled for s in states].count(False) == 1
            disabled = next(s.breakpoint for s in states if not s.enabled)
            await pilot.press("escape")
            await pilot.press("c")
            await wait_for(pilot, lambda: app.state in ("paused", "finished") and app.history.cursor > 0, "a stop or the end")
            hits = {s.breakpoint: s.hits for s in app.source.breakpoint_list.states()}
            assert hits[disabled] == 0
            enabled = next(bp for bp in hits if bp != disabled)
            if enabled.kind == "module":
                assert app.state == "paused" and (app.current.module, app.current.hook) == ("fc1", "forward_pre")
                assert hits[enabled] == 1
            else:  # the threshold is never crossed: the run goes to the end
                assert app.state == "finished" and hits[enabled] == 0
            await pilot.press("K", "d")
            assert len(app.source.breakpoint_list) == 1
            await pilot.press("a", *"norm >> 3", "enter")
            message = app.screen.query_one("#bp-message").render()
            assert "write a bound as" in str(message)

    run(script())


def test_console_evaluates_live_tensors_and_shows_errors():
    app = sample_app("seed.py")

    async def script():
        async with paused_at_start(app, size=(100, 30)) as pilot:
            await pilot.press("n")
            await paused_at(pilot, 1)
            event = app.current
            assert event.hook == "forward_pre" and event.module == "fc1"
            await pilot.press("colon")
            assert isinstance(app.screen, ConsoleScreen)
            await typed(pilot, "args[0].shape")
            await pilot.press("enter")
            await typed(pilot, "args[0] * 2")
            await pilot.press("enter")
            await typed(pilot, "grad_output[0]")
            await pilot.press("enter")
            await typed(pilot, "1/0")
            await pilot.press("enter")
            results = app.console_results
            live_x = app.source.live_firing(event).scope["args"][0]
            assert results[0].ok and results[0].text == repr(live_x.shape)
            assert results[1].tensor is not None and results[1].tensor.shape == list(live_x.shape)
            assert abs(results[1].tensor.stats.max - 2 * live_x.max().item()) < 1e-6
            assert not results[2].ok and "TypeError" in results[2].text  # no grad_output in forward
            assert not results[3].ok and results[3].text == "ZeroDivisionError: division by zero"
            await pilot.press("up", "up")
            assert app.screen.query_one("#console-input").value == "grad_output[0]"
            await pilot.press("escape")
            assert not isinstance(app.screen, ConsoleScreen)

    run(script())


def test_console_shows_what_a_line_prints_at_once():
    """`print("hello")` showed None, and a toast said the output would come when hooktui
    exits: a line's output is the console's, above its value, as in pdb."""
    app = sample_app("seed.py")

    async def script():
        async with app.run_test(size=(100, 30)) as pilot:  # notifications on: none may come
            await paused_at(pilot, 0)
            await pilot.press("n")
            await paused_at(pilot, 1)
            await pilot.press("colon")
            await typed(pilot, 'print("hello")')
            await pilot.press("enter")
            await typed(pilot, "print(args[0].sum())")
            await pilot.press("enter")
            await typed(pilot, "for i in range(3): print(i, file=sys.stderr if i else sys.stdout)")
            await pilot.press("enter")
            await typed(pilot, "import sys")
            await pilot.press("enter", "up", "up", "enter")  # the loop again, sys bound now
            results = app.console_results
            live_x = app.source.live_firing(app.current).scope["args"][0]
            assert (results[0].output, results[0].text) == ("hello\n", "")
            assert results[1].output == str(live_x.sum()) + "\n"
            assert not results[2].ok and "NameError" in results[2].text
            assert (results[4].output, results[4].text) == ("0\n1\n2\n", "")
            shown = str(app.screen.query_one("#console-results").query(Static).last().render())
            assert shown.endswith("0\n1\n2"), shown
            assert not app.model_output and not app._notifications

    run(script())


def test_console_on_a_recorded_trace_says_what_is_not_available():
    model = torch.nn.Sequential(torch.nn.Linear(2, 2))
    trace = record(model, torch.ones(1, 2))
    app = HooktuiApp(recorded=(trace.info, trace.events))

    async def script():
        async with app.run_test(size=(100, 30), notifications=False) as pilot:
            await pilot.pause()
            await pilot.press("colon")
            for line in ("tensors['args[0]']", "grad_output", "event.hook"):
                await typed(pilot, line)
                await pilot.press("enter")
            first, second, third = app.console_results
            assert first.tensor is not None and first.tensor.shape == [1, 2]
            assert not second.ok and "not available here: a recorded trace" in second.text
            assert "model" not in second.text  # a recorded trace offers no run's names
            assert third.text == repr(trace.events[0].hook)

    run(script())


def test_console_after_the_run_is_a_post_mortem():
    """After `c` to the end, `:` had `module` "not available here: a recorded trace..." (a
    live run) and `model` a NameError. As pdb's post-mortem: the model, the loss, the output
    and each parameter's final .grad, compared with plain torch on the same model."""
    app = sample_app("seed.py")
    loaded = load_target(SAMPLES / "seed.py")
    loss = loaded.loss_fn(loaded.model(*loaded.inputs)) if loaded.loss_fn else loaded.model(*loaded.inputs).sum()
    loss.backward()
    plain = dict(loaded.model.named_parameters())

    async def script():
        async with paused_at_start(app, size=(100, 30)) as pilot:
            await pilot.press("c")
            await wait_for(pilot, lambda: app.state == "finished", "the end of the run")
            await pilot.press("colon")
            for line in ("module", "type(model).__name__", "loss.item()", "grads['fc1.weight'].sum().item()",
                         "sorted(grads)", "model.fc1.weight.grad"):
                await typed(pilot, line)
                await pilot.press("enter")
            module, name, loss_value, grad_sum, names, grad_on_model = app.console_results
            assert not module.ok and "not available at a past firing" in module.text and "model" in module.text
            assert name.text == repr(type(loaded.model).__name__)
            assert loss_value.text == repr(loss.item())
            assert grad_sum.text == repr(plain["fc1.weight"].grad.sum().item())
            assert names.text == repr(sorted(plain))
            assert grad_on_model.text == "None"  # the run left the model as it found it

    run(script())


SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]


@pytest.fixture
def _repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # paths on screen are relative to the working directory


@pytest.mark.parametrize("size", SIZES)
def test_snapshot_stopped_at_the_first_nan_of_nan_hunt(snap_compare, size, _repo_root):
    async def run_before(pilot):
        app = pilot.app
        await paused_at(pilot, 0)
        await pilot.press("exclamation_mark", "c")
        await wait_for(pilot, lambda: app.state == "paused" and app.current is not None and app.current.hook == "node", "the stop")
        explain = app.query_one(ExplainPane)
        await wait_for(pilot, lambda: explain.is_on_screen and explain._args[-1] is not None, "the explain pane with the stop")
        app.clear_notifications()
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()

    assert snap_compare(sample_app("nan_hunt.py"), terminal_size=size, run_before=run_before)


def test_snapshot_console_with_a_result(snap_compare, _repo_root):
    async def run_before(pilot):
        app = pilot.app
        await paused_at(pilot, 0)
        await pilot.press("n")
        await paused_at(pilot, 1)
        await pilot.press("colon")
        for line in ("args[0] * 2", "args[0].shape", "grad_output[0]"):
            await typed(pilot, line)
            await pilot.press("enter")
        await wait_for(pilot, lambda: len(app.console_results) == 3, "three results")
        app.screen.query_one("#console-input").cursor_blink = False  # the cursor shown, not caught mid-blink
        await pilot.pause()

    assert snap_compare(sample_app("seed.py"), terminal_size=(100, 30), run_before=run_before)


def test_bang_in_a_recorded_trace_walks_to_the_first_nan():
    events = record(*_nan_model()).events
    first = next(i for i, e in enumerate(events) if any(t.nonfinite_counts and any(t.nonfinite_counts) for t in e.tensors))
    trace = record(*_nan_model())
    app = HooktuiApp(recorded=(trace.info, trace.events))

    async def script():
        async with app.run_test(size=(100, 30), notifications=False) as pilot:
            await pilot.pause()
            await pilot.press("exclamation_mark", "c")
            assert app.history.cursor == first
            # By construction: log(relu(-1)) = log(0) = -Inf is the output of module "2".
            assert (app.current.module, app.current.hook) == ("2", "forward")
            assert app.stops[(first, 0)].reason == "1 -Inf in output"
            await pilot.press("exclamation_mark", "g", "c")  # off again: c goes to the end
            assert app.history.cursor == len(events) - 1

    run(script())


def _nan_model():
    class Log(torch.nn.Module):
        def forward(self, x):
            return torch.log(x)

    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU(), Log(), torch.nn.Linear(2, 1))
    with torch.no_grad():
        model[0].weight.copy_(torch.tensor([[1.0, 0.0], [-1.0, 0.0]]))
        model[0].bias.zero_()
    return model, torch.ones(1, 2)  # relu(-1) = 0, log(0) = -Inf at module "2"


def test_condition_and_threshold_added_in_the_app_stop_the_run():
    app = sample_app("seed.py")

    async def script():
        async with paused_at_start(app, size=(100, 30)) as pilot:
            condition = 'if grad_output is not None and module.__class__.__name__ == "Linear"'
            await pilot.press("K", condition[0])  # the first key starts the input
            await typed(pilot, condition[1:], holds=condition)
            await pilot.press("enter", "escape")
            await pilot.press("c")
            await wait_for(pilot, lambda: app.state == "paused" and app.history.cursor > 0, "the condition's stop")
            event = app.current
            # The first Linear backward_pre: backward starts at fc2 (the last layer).
            assert (event.module, event.hook) == ("fc2", "backward_pre")
            assert "is true" in app.stops[event.key].reason
            await pilot.press("K", "d", "a")
            await typed(pilot, "absmax > 0 in fc1 backward tensor grad_output*")
            await pilot.press("enter", "escape", "c")
            await wait_for(pilot, lambda: app.state == "paused" and app.current.module == "fc1", "the threshold's stop")
            assert (app.current.hook, app.stops[app.current.key].breakpoint.kind) == ("backward_pre", "threshold")

    run(script())


def test_K_then_a_adds_a_breakpoint_when_there_are_none():
    """The README's `K`, then `a`: with no breakpoints yet, `a` must open the input, not be
    typed into it (it was: `did not understand 'anan'`)."""
    app = sample_app("seed.py")

    async def script():
        async with paused_at_start(app) as pilot:
            await pilot.press("K", "a", *"nan", "enter")
            assert [s.breakpoint.kind for s in app.source.breakpoint_list.states()] == ["nonfinite"]
            await pilot.press("a", *"absmax > 10", "enter")
            assert [s.breakpoint.kind for s in app.source.breakpoint_list.states()] == ["nonfinite", "threshold"]

    run(script())


def test_B_says_so_and_the_breakpoints_screen_lists_it():
    app = sample_app("seed.py")

    async def script():
        async with paused_at_start(app) as pilot:
            await pilot.press("B")
            assert app.source.break_on_backward
            assert any("break when backward starts: on" in str(n.message) for n in app._notifications)
            await pilot.press("K")
            assert "break when backward starts" in str(app.screen.query_one("#bp-message").render())
            await pilot.press("escape", "c")
            await wait_for(pilot, lambda: app.state == "paused" and app.current.phase == "backward", "the stop at backward")
            await pilot.pause()
            from hooktui.ui.widgets.status import status_text

            assert "■ backward starts (B)" in status_text(app._status_info()).plain
            await pilot.press("B")
            assert not app.source.break_on_backward
            assert any("break when backward starts: off" in str(n.message) for n in app._notifications)

    run(script())


def test_go_to_firing_number():
    """`#`, a number, enter: the firing of that number (as trace and Explain cite it);
    one past the end of a finished run says it is not in this run, and which is its last,
    and leaves the cursor where it was."""
    app = sample_app("seed.py")

    async def script():
        async with paused_at_start(app) as pilot:
            await pilot.press("c")
            await wait_for(pilot, lambda: app.state == "finished", "the end of the run")
            target = app.history.events[len(app.history.events) // 2].index
            await pilot.press("number_sign", *str(target), "enter")
            assert app.current.index == target
            await pilot.press("number_sign", *"9999", "enter")
            assert app.current.index == target
            last = app.history.events[-1].number  # the seed model's last firing is no legacy one: shown
            assert any(f"#9999 is not in this run: its last firing is #{last}" == str(n.message) for n in app._notifications)
            await pilot.press("number_sign", "escape")
            assert app.current.index == target and len(app.screen_stack) == 1

    run(script())


def test_at_a_nan_stop_the_values_pane_shows_the_bad_tensor_at_its_first_nan():
    app = sample_app("nan_hunt.py")

    async def script():
        async with paused_at_start(app, size=(120, 40)) as pilot:
            await pilot.press("exclamation_mark", "c")
            await wait_for(pilot, lambda: app.state == "paused" and app.history.cursor > 0, "the stop")
            await pilot.pause()
            stop = app.stops[app.current.key]
            shown = app.lower.tensor
            assert stop.reason.endswith(f" in {shown.name}") and app.current.tensors[0].name != shown.name
            grid = app.lower.pane("values").query_one("ValuesGrid")
            row, column = grid.cursor_coordinate
            assert grid.get_cell_at((row, column)).plain == "nan"
            # Independently of the pane: the cell is the first non-finite value of that slice.
            rows, cols = shown.values_shape[-2:]
            start = app.lower.slice_no * rows * cols
            flat = shown.values[start:start + rows * cols]
            first = next(i for i, v in enumerate(flat) if v != v or v in (float("inf"), float("-inf")))
            assert (row, column - 1) == divmod(first, cols)

    run(script())


def test_console_runs_statements_and_keeps_their_names_across_firings():
    app = sample_app("seed.py")

    async def script():
        async with paused_at_start(app, size=(100, 30)) as pilot:
            await pilot.press("n")
            await paused_at(pilot, 1)
            live_x = app.source.live_firing(app.current).scope["args"][0]
            await pilot.press("colon")
            await typed(pilot, "x = args[0] * 3")
            await pilot.press("enter")
            await typed(pilot, "import math")
            await pilot.press("enter", "escape")
            await pilot.press("n")
            await paused_at(pilot, 2)
            await pilot.press("colon")
            await typed(pilot, "math.isclose(x.sum().item(), 3 * XSUM)".replace("XSUM", repr(live_x.sum().item())))
            await pilot.press("enter")
            await typed(pilot, "x = = 1")
            await pilot.press("enter")
            results = app.console_results
            assert [r.text for r in results[:2]] == ["ok", "ok"]
            assert results[2].ok and results[2].text == "True"
            assert not results[3].ok and results[3].text.startswith("SyntaxError")

    run(script())


def test_a_saved_stopped_run_opens_at_the_stop_with_its_explanation(tmp_path):
    """`trace --stop-at-nonfinite --save` and a guard's file open in `view` at the firing that
    stopped, Explain saying why and where it was born (it opened at #0, generic text)."""
    from hooktui.cli import main
    from hooktui.engine.records.trace_file import read_trace_file

    saved = tmp_path / "stopped.jsonl"
    assert main(["trace", str(SAMPLES / "nan_hunt.py"), "--stop-at-nonfinite", "--save", str(saved)]) == 3
    trace = read_trace_file(saved)
    stop_index = trace.info.stopped_at
    # Independent of the file's header: the first saved firing holding a NaN is where it stopped.
    assert stop_index == next(e.index for e in trace.events if any(t.stats and t.stats.nan for t in e.tensors))
    app = HooktuiApp(recorded=(trace.info, trace.events), sources=trace.sources)

    async def script():
        async with app.run_test(size=(120, 40), notifications=False) as pilot:
            await pilot.pause()
            await pilot.pause()
            assert app.current.index == stop_index
            explain = app.lower.pane("explain")
            text = explain.renderable.renderables[0].plain
            assert text.startswith("■ stopped: NaN/Inf in any tensor: 1 NaN in grad_inputs[0]") and "where it was born" in text

    run(script())


def test_hits_count_stops_made_walking_the_history_once_each():
    """K's hit counts stayed at 0 for stops made while walking the history (issue 25.10):
    a stop counts once, however often `c` comes past that firing again."""
    app = sample_app("seed.py")

    async def script():
        async with paused_at_start(app, size=(100, 30)) as pilot:
            await pilot.press("c")
            await wait_for(pilot, lambda: app.state == "finished", "the end of the run")
            fc1 = [e.index for e in app.history.events if e.module == "fc1"]
            await pilot.press("K", "a", *"module fc1", "enter", "escape", "g")

            def hits():
                return app.source.breakpoint_list.states()[0].hits

            await pilot.press("c")
            assert app.current.index == fc1[0] and hits() == 1
            await pilot.press("c")
            assert app.current.index == fc1[1] and hits() == 2
            await pilot.press("g", "c")  # the first one again: not a new hit
            assert app.current.index == fc1[0] and hits() == 2

    run(script())


def test_S_saves_the_live_session_for_view_and_diff(tmp_path, monkeypatch):
    """The firings so far, saved from inside the app, read back as the same records; a bad
    path is one message and nothing written."""
    from hooktui.cli import main
    from hooktui.engine.records.trace_file import read_trace_file

    monkeypatch.chdir(tmp_path)
    app = sample_app("seed.py")

    async def script():
        async with paused_at_start(app) as pilot:
            await pilot.press("n", "n", "n")
            await paused_at(pilot, 3)
            await pilot.press("S")
            box = app.screen.query_one("#save-input")
            assert box.value.startswith("hooktui-session-") and box.value.endswith(".jsonl")
            box.value = str(tmp_path / "live.jsonl")
            await pilot.press("enter")
            assert any("saved 4 firings" in str(n.message) for n in app._notifications)
            await pilot.press("S")
            app.screen.query_one("#save-input").value = str(tmp_path / "no-such-folder" / "x.jsonl")
            await pilot.press("enter")
            assert any("not saved:" in str(n.message) and "does not exist" in str(n.message) for n in app._notifications)
            shown.extend(e.to_dict() for e in app.history.events)

    shown = []
    run(script())
    saved = read_trace_file(tmp_path / "live.jsonl")
    assert [e.to_dict() for e in saved.events] == shown
    assert not (tmp_path / "no-such-folder").exists()
    assert main(["diff", str(tmp_path / "live.jsonl"), str(tmp_path / "live.jsonl")]) == 0


def test_K_takes_a_spec_typed_or_pasted_in_one_burst():
    """Space, `a` and `d` are the table's keys, but not inside a spec that arrives in one burst
    (typed fast, pasted without bracketed paste): `norm > 1e3` was read as 'norm>1e3' and
    `module fc1 backward` as 'moulefc1bckwr'. A bracketed paste goes to the input whole."""
    app = sample_app("seed.py")

    def labels() -> list[str]:
        return [s.breakpoint.label for s in app.source.breakpoint_list.states()]

    async def script():
        async with paused_at_start(app) as pilot:
            await pilot.press("K")
            burst(app, "norm > 1e3", "enter")
            await wait_for(pilot, lambda: len(labels()) == 1, "the first breakpoint")
            burst(app, "module fc1 backward", "enter")
            await wait_for(pilot, lambda: len(labels()) == 2, "the second breakpoint")
            app.screen.post_message(events.Paste("absmax > 10 in fc2 forward"))
            await pilot.press("enter")
            await wait_for(pilot, lambda: len(labels()) == 3, "the pasted breakpoint")
            specs = ["norm > 1e3", "module fc1 backward", "absmax > 10 in fc2 forward"]
            assert labels() == [parse_breakpoint(spec).label for spec in specs]
            assert str(app.screen.query_one("#bp-message").render()).startswith("added")

    run(script())
