"""One number per firing in every view (engine/records/firing.py, issue 30).

Each view of a run — `trace`, `trace --legacy`, `trace --stop-at-nonfinite` (and its
--json and --save), the app (its history after `c`, with and without --break-nonfinite),
`hooktui.guard` and a recorded `hooktui.debug` — must give each firing the same number.
The reference is `trace --legacy --json`, every firing recorded; what each view must hold
is worked out here from the rule alone: the reference's plain firings less the kinds the
view hides (legacy_backward), up to where the view stops, plus the node firings a hunt
adds, each numbered N.1 after the plain firing N before it.

The NaN model (tests/zero_row_sqrt.py) is the one of issue 30: its forward ends in
`torch.sqrt`, so the hidden legacy firing of `norm` sees the Inf first; every view must
stop at the node firing of SqrtBackward0 instead, with the same number, and say where it
was born: SqrtBackward0 and the forward line, found here in the model's source text.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
from pathlib import Path

import pytest

import hooktui
from cli_run import ROOT, SAMPLES, results as wait_for_runs, start_many
from hooktui.commands.common import session_for
from hooktui.engine.analysis.born import where_born
from hooktui.engine.analysis.breakpoints import Breakpoint
from hooktui.engine.run.inputs import default_loss, split_inputs
from hooktui.engine.run.loader import load_target
from hooktui.engine.records.records import position_of
from hooktui.engine.records.trace_file import read_trace
from hooktui.loop import guard as guard_module
from hooktui.ui.app import HooktuiApp
from hooktui.ui.sources import LiveSource

SQRT = ROOT / "tests" / "zero_row_sqrt.py"
MODELS = sorted(SAMPLES.glob("*.py")) + [SQRT]
NAN_MODELS = {"nan.py", "nan_hunt.py", "zero_row_sqrt.py"}  # a NaN/Inf in their one step
SQRT_LINE_TEXT = "return torch.sqrt((x * x).sum(-1, keepdim=True))"


def _runs() -> dict:
    commands = {}
    for path in MODELS:
        commands[("legacy", path.name)] = ("trace", path, "--legacy", "--json")
        commands[("plain", path.name)] = ("trace", path, "--json")
        commands[("stop", path.name)] = ("trace", path, "--stop-at-nonfinite", "--json")
    commands["sqrt table"] = ("trace", SQRT, "--stop-at-nonfinite")
    return commands


_RUNS = start_many(_runs(), forked=True)  # trace runs only: one interpreter, a fork a run (cli_run.hooktui_forked)


@pytest.fixture(scope="module")
def runs():
    return wait_for_runs(_RUNS)


def fingerprint(event) -> tuple:
    """A firing as every view must give it: its number and what it is."""
    if isinstance(event, dict):
        number = f"{event['index']}.{event['sub']}" if event.get("sub") else str(event["index"])
        return (number, event["phase"], event["hook"], event["module"], event["call"])
    return (event.number, event.phase, event.hook, event.module, event.call)


def json_firings(run) -> tuple[list[tuple], dict | None]:
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    stopped = lines.pop()["stopped"] if lines and "stopped" in lines[-1] else None
    return [fingerprint(e) for e in lines if e["hook"] != "error"], stopped


def expected(reference: list[tuple], legacy: bool, stop: tuple | None = None, node: tuple | None = None) -> list[tuple]:
    """What a view must hold, from the reference and the rule: plain firings (legacy ones
    only if shown), a hunt's node firing placed after the plain firing its number follows,
    and nothing after the stop."""
    plain = [f for f in reference if "." not in f[0] and (legacy or f[2] != "legacy_backward")]
    if node is not None:
        after = int(node[0].split(".")[0])
        plain = [f for f in plain if int(f[0]) <= after] + [node] + [f for f in plain if int(f[0]) > after]
    if stop is not None:
        plain = plain[: plain.index(stop) + 1]
    return plain


def _node_of(firings: list[tuple]) -> tuple | None:
    nodes = [f for f in firings if f[2] == "node"]
    assert len(nodes) <= 1, nodes
    return nodes[0] if nodes else None


def _check_node_number(firings: list[tuple], node: tuple) -> None:
    """A hunt's node firing is N.1, N the plain firing just before it, whether or not shown."""
    number, sub = node[0].split(".")
    assert sub == "1"
    before = firings[firings.index(node) - 1]
    assert int(before[0].split(".")[0]) <= int(number)


# -- guard and debug, on a model file's step ------------------------------------------------
def _load(path: Path):
    loaded = load_target(path)
    args, kwargs = split_inputs(loaded.inputs)
    loss_fn = loaded.loss_fn or default_loss
    return loaded, lambda: loss_fn(loaded.model(*args, **kwargs))


def guard_firings(path: Path, monkeypatch) -> tuple[list[tuple], hooktui.GuardError | None]:
    """Every firing the guard checked in the step (seen as it checks them), and its error."""
    seen = []
    checked = guard_module.Guard._emit

    def emit(self, event, live):
        seen.append(event)
        return checked(self, event, live)

    monkeypatch.setattr(guard_module.Guard, "_emit", emit)
    loaded, step = _load(path)
    error = None
    try:
        with hooktui.guard(loaded.model):
            step().backward()
    except hooktui.GuardError as exc:
        error = exc
    monkeypatch.setattr(guard_module.Guard, "_emit", checked)
    return [fingerprint(e) for e in seen], error


def debug_file(path: Path) -> tuple:
    """A recorded hooktui.debug of the step (no terminal): its trace file's info and firings."""
    loaded, step = _load(path)
    before = set(Path(os.environ["HOOKTUI_DIR"]).glob("*.jsonl"))
    hooktui.debug(loaded.model, step)
    (written,) = set(Path(os.environ["HOOKTUI_DIR"]).glob("*.jsonl")) - before
    return read_trace(written)


def app_firings(path: Path, nonfinite: bool) -> tuple[list[tuple], object]:
    """The app on the model (`hooktui MODEL [--break-nonfinite]`: legacy firings recorded,
    hidden), `c` until it stops or ends; the firings it shows and the stopped firing."""
    loaded = load_target(path)
    session = session_for(loaded, pause=True, legacy=True)
    session.gate.skip_hooks.add("legacy_backward")
    if nonfinite:
        session.add_breakpoint(Breakpoint.nonfinite())
    app = HooktuiApp(LiveSource(session), source_path=loaded.path, show_timings=False)
    shown: list = []

    async def drive():
        async with app.run_test(size=(100, 30), notifications=False) as pilot:
            async def until(predicate):
                for _ in range(3000):
                    if predicate():
                        return
                    await pilot.pause(0.01)
                raise AssertionError(f"app: state {app.state}")

            await until(lambda: app.state == "paused")
            await pilot.press("c")
            await until(lambda: app.state in ("finished", "failed") or (app.state == "paused" and app.current.key in app.stops))
            history = app.history
            shown[:] = [history.events[p] for p in range(len(history)) if history.visible(p)]
            shown.append(app.current)
            assert history.shown_total == len(shown) - 1  # the status line's count is the rows shown
            await pilot.press("q")

    asyncio.run(drive())
    *events, current = shown
    return [fingerprint(e) for e in events], current


@pytest.fixture
def trace_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HOOKTUI_DIR", str(tmp_path))
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "HOOKTUI_RANK"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


# -- the tests ---------------------------------------------------------------------------
@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.name)
def test_every_view_gives_each_firing_the_same_number(path, runs, trace_dir, monkeypatch):
    reference, _ = json_firings(runs[("legacy", path.name)])
    assert runs[("legacy", path.name)].returncode == 0, runs[("legacy", path.name)].stderr
    assert all("." not in f[0] for f in reference)  # no hunt, nobody stepped: plain numbers only
    numbers = [int(f[0]) for f in reference]
    assert numbers == sorted(set(numbers))

    plain, _ = json_firings(runs[("plain", path.name)])
    assert plain == expected(reference, legacy=False)

    stopped_run = runs[("stop", path.name)]
    stop_firings, stopped = json_firings(stopped_run)
    node = _node_of(stop_firings)
    if path.name in NAN_MODELS:
        assert stopped_run.returncode == 3 and stopped is not None
        stop = stop_firings[-1]
        assert stop[2] != "legacy_backward"  # the stop is a firing the table shows
        assert stopped["index"] == int(stop[0].split(".")[0]) and stopped.get("sub", 0) == (int(stop[0].split(".")[1]) if "." in stop[0] else 0)
        assert stopped["born"] is not None
        if node is not None:
            _check_node_number(stop_firings, node)
        assert stop_firings == expected(reference, legacy=False, stop=stop, node=node)
    else:
        assert stopped_run.returncode == 0 and stopped is None and node is None
        assert stop_firings == expected(reference, legacy=False)

    app, current = app_firings(path, nonfinite=path.name in NAN_MODELS)
    if path.name in NAN_MODELS:
        assert fingerprint(current) == stop_firings[-1]
        assert app == stop_firings
    else:
        assert app == expected(reference, legacy=False)

    checked, error = guard_firings(path, monkeypatch)
    # The guard hides nothing it records and records no legacy firing (it counts them).
    if path.name in NAN_MODELS:
        assert error is not None and error.number == stop_firings[-1][0]
        assert checked == stop_firings
    else:
        assert error is None
        assert checked == expected(reference, legacy=False)

    info, recorded = debug_file(path)
    firings = [fingerprint(e) for e in recorded if e.hook != "error"]
    # debug hunts too: the same node firing, then the rest of the step.
    assert firings == expected(reference, legacy=False, node=_node_of(firings))
    if node is not None:
        assert _node_of(firings) == node


def _line_of(path: Path, text: str) -> int:
    hits = [n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    assert len(hits) == 1, hits
    return hits[0]


def _says_where_born(lines: list[str]) -> None:
    text = "\n".join(lines)
    assert "SqrtBackward0" in text and "backward of norm (RowNorm)" in text
    assert f"zero_row_sqrt.py:{_line_of(SQRT, SQRT_LINE_TEXT)}: {SQRT_LINE_TEXT}" in text


def test_the_sqrt_model_stops_at_one_visible_firing_in_every_view(runs, trace_dir, tmp_path, monkeypatch):
    """Issue 30: the legacy firing of `norm` sits on SqrtBackward0 and sees the Inf first;
    every view stops at the node firing of SqrtBackward0 with one number, and says where
    the value was born."""
    reference, _ = json_firings(runs[("legacy", "zero_row_sqrt.py")])
    legacy = [f for f in reference if f[2] == "legacy_backward" and f[3] == "norm"]
    assert legacy, "the model's hidden legacy firing on SqrtBackward0"
    stop_firings, stopped = json_firings(runs[("stop", "zero_row_sqrt.py")])
    stop = stop_firings[-1]
    # Independent of the engine's numbers: the node of `norm`, N.1 after the hidden legacy firing N.
    assert stop[1:] == ("backward", "node", "norm", 0)
    assert stop[0] == f"{legacy[0][0]}.1"
    _says_where_born(stopped["born"]["explanation"])
    assert (stopped["born"]["origin"], stopped["born"]["origin_sub"]) == (stopped["index"], stopped["sub"])

    table = runs["sqrt table"]
    assert table.returncode == 3
    rows = table.stdout.split("\nstopped at #")[0]
    assert f"\n{stop[0]:>4}  backward  node" in rows  # printed, as the last row
    head, _, born = table.stdout.partition("\nstopped at #")[2].partition("\nwhere it was born:\n")
    assert head.startswith(f"{stop[0]}: NaN/Inf in any tensor")
    _says_where_born(born.splitlines())

    saved = tmp_path / "run.jsonl"
    run = hooktui_run("trace", SQRT, "--stop-at-nonfinite", "--save", saved)
    assert run.returncode == 3, run.stderr
    info, events = read_trace(saved)
    at = position_of(events, *info.stopped_key)
    assert at is not None and fingerprint(events[at]) == stop
    assert all(e.hook != "legacy_backward" for e in events)  # the file holds what the table shows
    _says_where_born(where_born(events, upto=info.stopped_key).lines)

    _, current = app_firings(SQRT, nonfinite=True)
    assert fingerprint(current) == stop

    _, error = guard_firings(SQRT, monkeypatch)
    assert isinstance(error, hooktui.NonFiniteError) and error.number == stop[0]
    _says_where_born(error.born.lines)
    info, events = read_trace(error.trace_path)
    assert fingerprint(events[position_of(events, *info.stopped_key)]) == stop

    info, events = debug_file(SQRT)
    born = where_born(events)
    assert fingerprint(events[position_of(events, *born.origin_key)]) == stop
    _says_where_born(born.lines)


def hooktui_run(*args):
    from cli_run import hooktui as run

    return run(*args)


def _train_loop():
    spec = importlib.util.spec_from_file_location("train_loop_walk", SAMPLES / "train_loop.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_training_loop_walkthrough_numbers_step_36_alike_in_guard_and_debug(trace_dir):
    """`python train_loop.py --guard` stops at step 36; `--debug-step 36` recorded (no
    terminal) holds the same firings under the same numbers, the guard's stop among them."""
    train_loop = _train_loop()
    with pytest.raises(hooktui.NonFiniteError) as caught:
        train_loop.train(37, guard=True, log=lambda *_: None)
    error = caught.value
    assert error.step == 36
    _, guarded = read_trace(error.trace_path)
    before = set(trace_dir.glob("*.jsonl"))
    train_loop.train(37, debug_step=36, log=lambda *_: None)
    (written,) = set(trace_dir.glob("*.jsonl")) - before
    _, debugged = read_trace(written)
    guard_prints = [fingerprint(e) for e in guarded]
    debug_prints = [fingerprint(e) for e in debugged if e.hook != "error"]
    assert guard_prints == debug_prints[: len(guard_prints)]
    stop = guard_prints[position_of(guarded, error.index, error.sub)]
    assert stop[1:] == ("forward", "forward", "criterion", 0) and stop in debug_prints
