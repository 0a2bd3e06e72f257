"""The command line as subcommands (issue 30.4): each command has only its own options, parsed
into frozen typed options (commands/options.py); the invocations of the one flat parser it
replaced keep working. In process: nothing here loads a model."""

from __future__ import annotations

import dataclasses

import pytest

from hooktui.cli import main, parse
from hooktui.commands.options import (
    BreakOptions, DiffOptions, ModelOptions, OpenOptions, RunOptions, ServeOptions, Tolerances, TraceOptions, ViewOptions,
)


@pytest.mark.parametrize("argv, options", [
    ([], OpenOptions()),
    (["m.py"], OpenOptions(ModelOptions("m.py"))),
    (["--traceback"], OpenOptions()),
    (["--break-nonfinite"], OpenOptions(breaks=BreakOptions(nonfinite=True))),
    (["open", "m.py", "--legacy", "--seed", "4"], OpenOptions(ModelOptions("m.py", seed=4), legacy=True)),
    (["--seed", "3", "trace", "m.py", "--json"], TraceOptions(ModelOptions("m.py", seed=3), json=True)),
    (["trace", "m.py", "--json", "--save", "f.jsonl", "--legacy", "--stop-at-nonfinite", "--values", "0", "--in", "fc*"],
     TraceOptions(ModelOptions("m.py"), BreakOptions(nonfinite=True, module="fc*"), legacy=True, json=True, save="f.jsonl", values=0)),
    (["view", "a.jsonl", "--against", "b.jsonl", "--rtol", "1e-3"], ViewOptions("a.jsonl", "b.jsonl", Tolerances(rtol=1e-3))),
    (["diff", "a.jsonl", "--json", "b.jsonl", "c.jsonl"], DiffOptions(("a.jsonl", "b.jsonl", "c.jsonl"), json=True)),
    (["run", "train.py", "--help", "--seed", "3"], RunOptions("train.py", ("--help", "--seed", "3"))),
])
def test_each_invocation_gives_its_commands_options(argv, options):
    command = parse(argv)
    assert command.options == options
    assert command.traceback == ("--traceback" in argv)
    with pytest.raises(dataclasses.FrozenInstanceError):
        command.options.legacy = True  # type: ignore[misc]


def test_serve_keeps_the_command_line_for_each_browser():
    argv = ["serve", "m.py", "--port", "9000", "--break-nonfinite"]
    options = parse(argv).options
    assert isinstance(options, ServeOptions) and options.port == 9000 and options.argv == tuple(argv)


def test_save_alone_keeps_the_firings_of_a_trace():
    assert not TraceOptions().keep_events
    assert TraceOptions(save="f.jsonl").keep_events and TraceOptions(breaks=BreakOptions(above=(("norm", 1.0),))).keep_events


@pytest.mark.parametrize("argv, words", [
    (["view", "a.jsonl", "--port", "3"], "--port goes with serve"),
    (["diff", "a.jsonl", "b.jsonl", "--legacy"], "--legacy goes with the commands that run a model"),
    (["open", "m.py", "--against", "b.jsonl"], "--against goes with view"),
    (["trace", "m.py", "--break-if", "True"], "--break-if is for the app"),
    (["serve", "a.jsonl", "--seed", "3"], "serve a.jsonl opens a recorded run"),
    (["trace", "m.py", "--no-such-option"], "unrecognized arguments: --no-such-option"),
    (["view", "a.jsonl", "b.jsonl"], "unexpected argument 'b.jsonl' (only diff takes several files)"),
    (["--traceback", "run", "train.py"], "run goes first"),
])
def test_an_option_of_another_command_is_refused_with_where_it_goes(argv, words, capsys):
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    assert words in capsys.readouterr().err


def test_help_lists_the_commands_and_each_commands_own_options(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert all(name in out for name in ("open", "trace", "view", "diff", "serve", "run"))
    with pytest.raises(SystemExit):
        main(["trace", "--help"])
    out = capsys.readouterr().out
    assert "--save" in out and "--values" in out and "--port" not in out and "--against" not in out and "--break-if" not in out
    with pytest.raises(SystemExit):
        main(["view", "--help"])
    out = capsys.readouterr().out
    assert "--against" in out and "--save" not in out and "--device" not in out
