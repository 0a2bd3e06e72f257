"""The overview's rows (engine/analysis/flow.py) against PyTorch's own hooks.

Expectations come from `plain_firings` (PyTorch's module hooks on every module, no
hooktui) and the parameters' `.grad` after a plain backward: one row per module call in
forward order, the output's abs-max and std, the joint L2 norms of grad_output,
grad_input and the parameters' gradients, and the NaN/Inf flags.
"""

from __future__ import annotations

import math

import pytest
import torch

from hooktui.engine.analysis.flow import CallRows, call_numbers
from hooktui.engine.run.session import record

from plain_hooks import load_sample, plain_firings


def _finite(tensors):
    values = [t.detach().double().reshape(-1) for t in tensors if t is not None]
    if not values:
        return None
    flat = torch.cat(values)
    return flat[torch.isfinite(flat)]


def joint_norm(tensors):
    finite = _finite(tensors)
    if finite is None or finite.numel() == 0:
        return None
    return finite.norm().item()


def flags(tensors) -> str:
    flat = torch.cat([t.detach().double().reshape(-1) for t in tensors if t is not None] or [torch.zeros(0, dtype=torch.float64)])
    return "NaN" if torch.isnan(flat).any() else "Inf" if torch.isinf(flat).any() else ""


def close(got, want) -> bool:
    if want is None:
        return got is None
    return got is not None and math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-9)


def expected_rows(sample: str):
    """[(module, call, absmax, std, grad_output norm, grad_input norm, flag)] in forward
    order, and {module: joint norm of its own parameters' gradients}, from plain PyTorch."""
    module = load_sample(sample)
    model = module.build_model()
    inputs = module.example_inputs()
    args = inputs if isinstance(inputs, tuple) else (inputs,)
    firings, _ = plain_firings(model, args, loss_fn=getattr(module, "loss_fn", None))
    by_call = {}
    for firing in firings:
        by_call.setdefault((firing.module, firing.call), {})[firing.hook] = firing.tensors
    rows = []
    for firing in firings:
        if firing.hook != "forward_pre":
            continue
        hooks = by_call[(firing.module, firing.call)]
        outputs = hooks["forward"][len(hooks["forward_pre"]) :]
        first = outputs[0].detach().double().reshape(-1)
        finite = first[torch.isfinite(first)]
        absmax = finite.abs().max().item()
        std = finite.std().item() if finite.numel() > 1 else None
        grad_output, grad_input = hooks.get("backward_pre", []), hooks.get("backward", [])
        flag_tensors = [outputs[0], *grad_output, *grad_input]
        rows.append((firing.module, firing.call, absmax, std, joint_norm(grad_output), joint_norm(grad_input), flag_tensors))
    params = {}
    for name, mod in model.named_modules():
        grads = [p.grad for p in mod.parameters(recurse=False) if p.grad is not None]
        if grads:
            params[name] = (joint_norm(grads), flags(grads))
    return rows, params


@pytest.mark.parametrize("sample", ["rnn", "nan", "seed"])
def test_rows_match_plain_hooks(sample):
    rows, params = expected_rows(sample)
    module = load_sample(sample)
    trace = record(module.build_model(), module.example_inputs(), getattr(module, "loss_fn", None))
    calls = CallRows()
    calls.extend(trace.events)
    assert [(r.module, r.call) for r in calls.rows] == [(m, c) for m, c, *_ in rows]
    param_rows = {}
    for row, (module_name, call, absmax, std, grad_output, grad_input, flag_tensors) in zip(calls.rows, rows, strict=True):
        numbers = call_numbers(row, trace.events)
        assert close(numbers.output_absmax.value, absmax), (module_name, call)
        assert close(numbers.output_std.value, std), (module_name, call)
        assert close(numbers.grad_output.value, grad_output), (module_name, call)
        assert close(numbers.grad_input.value, grad_input), (module_name, call)
        own_flag = flags(flag_tensors)
        if row.param_grads:
            param_rows.setdefault(module_name, []).append(numbers.params)
            own_flag = "NaN" if "NaN" in (own_flag, params[module_name][1]) else own_flag or params[module_name][1]
        assert numbers.flag == own_flag, (module_name, call)
    # Each module's parameter gradients sit on exactly one of its rows (AccumulateGrad
    # runs once per backward, however many calls).
    assert set(param_rows) == set(params)
    for module_name, quantities in param_rows.items():
        assert len(quantities) == 1
        assert close(quantities[0].value, params[module_name][0]), module_name


def test_rows_grow_with_the_firings_and_version_on_change():
    module = load_sample("rnn")
    trace = record(module.build_model(), module.example_inputs(), module.loss_fn)
    events = trace.events
    half = next(i for i, e in enumerate(events) if e.phase == "backward")
    calls = CallRows()
    seen = []
    calls.extend(seen)
    seen.extend(events[:half])
    changed = calls.extend(seen)
    assert len(calls) == len(changed) == 7  # root, embed, cell x4, head
    versions = [r.version for r in calls.rows]
    assert all(r.backward_pre is None and not r.param_grads for r in calls.rows)
    seen.extend(events[half:])
    changed = calls.extend(seen)
    assert len(calls) == 7  # backward adds no rows
    assert changed == {i for i, r in enumerate(calls.rows) if r.version > versions[i]}
    assert all(r.backward_pre is not None for r in calls.rows)
    # The current firing's row: a backward firing belongs to the row of its call.
    cell_2 = next(e for e in events if e.hook == "backward_pre" and e.module == "cell" and e.call == 2)
    assert calls.rows[calls.row_of(cell_2)].call == 2


def test_a_root_returning_a_dict_shows_the_gradient_reaching_its_tensors():
    """PyTorch's hooks see no output of a module returning a dict (issue 25.11: the overview
    said `∇ output None`): the row gives the norm of the gradient of the dict's tensors."""
    module = load_sample("transformer")
    model = module.build_model()
    output = model(**module.example_inputs())
    output["logits"].retain_grad()
    module.loss_fn(output).backward()
    # From outside the call, only `logits` gets a gradient (the loss reads nothing else; the
    # `hidden` tensor's .grad would be the part flowing back through lm_head, inside the call).
    want = joint_norm([output["logits"].grad])
    trace = record(module.build_model(), module.example_inputs(), module.loss_fn)
    calls = CallRows()
    calls.extend(trace.events)
    root = calls.rows[0]
    assert root.module == "" and close(call_numbers(root, trace.events).grad_output.value, want)
