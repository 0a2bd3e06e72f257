"""How the library speaks (issue 30.6): what the user may fix is a HooktuiWarning, which a
program can filter; information goes to the `hooktui` logger, printed on the current stderr
by default (`hooktui: ...`, as the README shows)."""

from __future__ import annotations

import logging
import warnings

import pytest

import hooktui
from hooktui.loop import say


def test_information_is_printed_on_stderr_by_default(capsys):
    say.info("recorded the step (3 firings) to x.jsonl; open it with: hooktui view x.jsonl")
    assert capsys.readouterr().err == "hooktui: recorded the step (3 firings) to x.jsonl; open it with: hooktui view x.jsonl\n"


def test_information_can_be_silenced_or_routed(capsys):
    logger = logging.getLogger("hooktui")
    handlers, seen = list(logger.handlers), []
    handler = logging.Handler()
    handler.emit = seen.append
    try:
        logger.setLevel(logging.WARNING)
        say.info("quiet")
        assert capsys.readouterr().err == ""
        logger.setLevel(logging.INFO)
        for own in handlers:
            logger.removeHandler(own)
        logger.propagate = True
        logging.getLogger().addHandler(handler)
        say.info("routed")
    finally:
        logging.getLogger().removeHandler(handler)
        logger.propagate = False
        logger.setLevel(logging.INFO)
        for own in handlers:
            logger.addHandler(own)
    assert [record.getMessage() for record in seen] == ["routed"] and capsys.readouterr().err == ""


def test_a_warning_is_a_hooktui_warning_that_can_be_filtered():
    with pytest.warns(hooktui.HooktuiWarning, match="could not save"):
        say.warn("could not save the trace to x: denied")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # a HooktuiWarning is a UserWarning...
        warnings.filterwarnings("ignore", category=hooktui.HooktuiWarning)  # ...that a program can silence alone
        say.warn("ignored")


def test_a_warning_made_an_error_by_a_filter_is_logged_not_raised(capsys):
    """`-W error` must not turn hooktui's warning into an exception in the user's forward."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        say.warn("guard failed in a hook and went on")  # raises nothing
    assert "hooktui: guard failed in a hook and went on" in capsys.readouterr().err


def test_a_warning_points_at_the_callers_line():
    with pytest.warns(hooktui.HooktuiWarning) as caught:
        say.warn("here")
    assert caught[0].filename == __file__
