"""The callbacks' options and imports, without a training run."""

from __future__ import annotations

import importlib
import sys

import pytest

from hooktui.integrations.plan import StepPlan


@pytest.mark.parametrize("module, libraries, install", [
    ("hooktui.integrations.lightning", ("lightning", "lightning.pytorch", "pytorch_lightning"), "pip install lightning"),
    ("hooktui.integrations.pytorch_lightning", ("pytorch_lightning",), "pip install pytorch-lightning"),
    ("hooktui.integrations.transformers", ("transformers",), "pip install transformers accelerate"),
])
def test_without_the_library_the_import_says_what_to_install(monkeypatch, module, libraries, install):
    for name in libraries:
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed: importing it raises ImportError
    monkeypatch.delitem(sys.modules, module, raising=False)
    with pytest.raises(ImportError) as caught:
        importlib.import_module(module)
    message = str(caught.value)
    assert message.endswith(install) and "\n" not in message
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_hooktui_imports_without_them(monkeypatch):
    for name in ("lightning", "lightning.pytorch", "pytorch_lightning", "transformers"):
        monkeypatch.setitem(sys.modules, name, None)
    import hooktui.integrations  # noqa: F401
    import hooktui.integrations.plan  # noqa: F401
    import hooktui.integrations.lightning_hooks  # noqa: F401


@pytest.mark.parametrize("options, error", [
    ({"debug_step": -1}, "debug_step must be a step number"),
    ({"debug_step": "4"}, "debug_step must be a step number"),
    ({"debug_step": True}, "debug_step must be a step number"),
    ({"record_every": 0}, "record_every must be a whole number of steps"),
    ({"guard": "yes"}, "guard must be True, False or a dict"),
    ({"on_quit": "exit"}, "on_quit must be one of"),
    ({"arm": "yes"}, "arm must be True, False or a dict"),
])
def test_bad_options_are_refused_when_the_callback_is_made(options, error):
    arguments = {"debug_step": None, "record_every": None, "guard": False, "on_quit": "raise", "arm": False, **options}
    with pytest.raises((ValueError, TypeError), match=error):
        StepPlan("a callback", **arguments)


def test_which_steps_are_debugged_or_recorded():
    plan = StepPlan("a callback", debug_step=3, record_every=2, guard=False, on_quit="raise")
    assert [plan.mode(step) for step in range(6)] == ["record", None, "record", "debug", "record", None]
    plan.done.add(2)  # a step's first batch was taken: the next batches of that step are not
    assert plan.mode(2) is None
