"""The console's results (engine/analysis/console.py): whatever an expression gives, one line,
nothing raised into the app."""

from __future__ import annotations

import torch

from hooktui.engine.analysis.console import evaluate
from hooktui.engine.records.records import Event

EVENT = Event(index=0, phase="forward", hook="forward", module="fc", module_type="Linear", call=0)


def test_an_instance_of_a_class_made_in_the_expression_is_shown():
    # type() in an eval'd line: the class has no __module__ (the namespace has no __name__).
    result = evaluate("type('Made', (), {'__repr__': lambda self: 'a Made'})()", EVENT, names={})
    assert result.ok, result.text
    assert result.text == "a Made"


def test_a_class_whose_module_is_not_a_string_is_shown():
    result = evaluate("type('Odd', (), {'__module__': 5, '__repr__': lambda self: 'an Odd'})()", EVENT, names={})
    assert result.ok and result.text == "an Odd", result.text


def test_a_tensor_result_is_still_summarised():
    names = {"t": torch.tensor([1.0, -3.0])}
    result = evaluate("t * 2", EVENT, names=names)
    assert result.ok and result.tensor is not None
    assert tuple(result.tensor.shape) == (2,) and result.tensor.dtype == "float32"
