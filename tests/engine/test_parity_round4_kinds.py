"""Tensors of unusual kinds and multi-grad hooks, against PyTorch's own hooks (issue 31, items 4-7).

- inference tensors (an encoder run under `torch.inference_mode()`, then a trained head):
  they have no version counter, and every slot must still be summarised;
- nested tensors (an eval, frozen `TransformerEncoder(enable_nested_tensor=True)` with a
  padding mask): the layers' firings must all be there, each nested tensor summarised by
  its components (shapes, values, stats);
- sparse gradients (`Embedding(sparse=True)`, `EmbeddingBag(sparse=True)`): the param_grad
  shows the coalesced rows, their indices and values, and stats of those values;
- `register_multi_grad_hook`: one user_hook firing per call of the user's function, with
  what it received.

Every expectation is computed here with plain PyTorch hooks on an identical twin. The
summary tests run twice: the host path and the deferred-device path (HOOKTUI_DEVICE_PATH).
"""

from __future__ import annotations

import math
import warnings

import pytest
import torch
from torch import nn
from torch.autograd.graph import register_multi_grad_hook

import hooktui
from hooktui.engine.summaries.stats import DEVICE_PATH_ENV
from kinds_models import SparseTables, nested_inputs, nested_model, sparse_index
from plain_hooks import MODULE_HOOKS, assert_record_matches, assert_same_as_pytorch, record_all, seeded


@pytest.fixture(params=[False, True], ids=["host", "device-path"])
def device_path(request, monkeypatch):
    if request.param:
        monkeypatch.setenv(DEVICE_PATH_ENV, "1")
    else:
        monkeypatch.delenv(DEVICE_PATH_ENV, raising=False)
    return request.param


def assert_stats_of(record, values: torch.Tensor) -> None:
    """record.stats describe exactly `values` (every element finite here)."""
    flat = values.detach().double().reshape(-1)
    stats = record.stats
    assert stats.count == flat.numel() and stats.nan == stats.posinf == stats.neginf == 0
    assert math.isclose(stats.mean, flat.mean().item(), rel_tol=1e-5, abs_tol=1e-6)
    assert math.isclose(stats.min, flat.min().item(), rel_tol=1e-6, abs_tol=1e-7)
    assert math.isclose(stats.max, flat.max().item(), rel_tol=1e-6, abs_tol=1e-7)


# 4. An encoder run under inference mode, then a trained head --------------------------------
class InferenceEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 4))
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        with torch.inference_mode():
            h = self.enc(x)
        return self.head(h.clone())  # an inference tensor cannot be saved for backward: cloned


def test_inference_mode_encoder_every_slot_summarised_as_pytorch(device_path):
    def make():
        g = torch.Generator().manual_seed(1)
        return torch.randn(3, 4, generator=g)

    events = assert_same_as_pytorch(seeded(InferenceEncoder), make)
    enc = [e for e in events if e.module.startswith("enc")]
    assert len(enc) == 8  # pre and post of enc and of its three children
    assert all(not t.is_missing for e in enc for t in e.tensors)


def test_a_users_hook_on_an_inference_mode_module_keeps_what_it_saw():
    def run(traced: bool):
        seen = []
        model = seeded(InferenceEncoder)()
        model.enc[0].register_forward_hook(lambda m, a, out: seen.append([a[0].clone(), out.clone()]))
        x = torch.randn(3, 4, generator=torch.Generator().manual_seed(1))
        trace = hooktui.record(model, x) if traced else model(x).sum().backward()
        return seen, trace

    plain, _ = run(False)
    seen, trace = run(True)
    fired = [e for e in trace.events if e.hook == "user_hook"]
    assert len(fired) == len(plain) == len(seen) == 1
    assert [t.name for t in fired[0].tensors] == ["args[0]", "output"]
    for record, tensor in zip(fired[0].tensors, plain[0]):
        assert_record_matches(record, tensor)


# 5. A frozen, eval TransformerEncoder that converts its input into a nested tensor --------------
def _flat(value) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _flat(v)]
    return []


def plain_nested_firings(model: nn.Module, inputs: dict) -> list[tuple[str, str, list[torch.Tensor | None]]]:
    """(hook, module, tensors) from PyTorch's forward and full backward hooks on every module;
    a nested tensor is kept as it is (cloned), PyTorch's own Firing key cannot take its shape."""
    names = {id(m): n for n, m in model.named_modules()}
    log, handles = [], []

    def keep(t):
        return None if t is None else t.detach().clone()

    for module in model.modules():
        handles += [
            module.register_forward_pre_hook(lambda m, a: log.append(("forward_pre", names[id(m)], [keep(t) for t in _flat(a)]))),
            module.register_forward_hook(lambda m, a, o: log.append(("forward", names[id(m)], [keep(t) for t in _flat(a) + _flat(o)]))),
            module.register_full_backward_pre_hook(lambda m, go: log.append(("backward_pre", names[id(m)], [keep(g) for g in go]))),
            module.register_full_backward_hook(lambda m, gi, go: log.append(("backward", names[id(m)], [keep(g) for g in gi]))),
        ]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model(**inputs).sum().backward()
    finally:
        for handle in handles:
            handle.remove()
    return log


def assert_nested_record(record, tensor: torch.Tensor) -> None:
    parts = tensor.unbind()
    assert record.layout is not None and record.layout.kind == "nested", record.name
    assert record.layout.parts == [list(p.shape) for p in parts]
    padded = torch.nested.to_padded_tensor(tensor, 0.0)
    assert record.shape == list(padded.shape)
    stored = torch.cat(parts)  # the components share their trailing dims here
    assert record.layout.stored == list(stored.shape)
    assert record.values_shape == list(stored.shape)
    assert torch.allclose(torch.tensor(record.values, dtype=torch.float64), stored.double().reshape(-1), rtol=1e-5, atol=1e-6)
    assert_stats_of(record, stored)


def test_nested_tensor_encoder_keeps_every_firing_and_summarises_components(device_path):
    expected = plain_nested_firings(nested_model(), nested_inputs())
    assert any(t is not None and t.is_nested for _, _, ts in expected for t in ts)  # the model does make nested tensors
    trace = record_all(nested_model(), nested_inputs())
    assert not trace.failed
    events = [e for e in trace.events if e.hook in MODULE_HOOKS]
    assert [(e.hook, e.module) for e in events] == [(h, m) for h, m, _ in expected]
    assert len([e for e in events if e.module.startswith("enc.layers")]) == 36
    for event, (_, _, tensors) in zip(events, expected):
        records = [t for t in event.tensors if not t.extra and not t.name.startswith("kwargs[")]
        assert len(records) == len(tensors), (event.hook, event.module)
        for record, tensor in zip(records, tensors):
            if tensor is not None and tensor.is_nested:
                assert_nested_record(record, tensor)
            else:
                assert_record_matches(record, tensor)


# 6. Sparse gradients of embeddings ----------------------------------------------------------
def plain_param_grads(model: nn.Module, inputs) -> list[tuple[str, torch.Tensor]]:
    """(parameter, .grad) in the order PyTorch's post-accumulate-grad hooks run."""
    seen = []
    handles = [p.register_post_accumulate_grad_hook(lambda p, n=n: seen.append((n, p.grad.detach().clone())))
               for n, p in model.named_parameters()]
    model(inputs).backward()
    for handle in handles:
        handle.remove()
    return seen


def test_sparse_embedding_grads_show_rows_indices_and_values(device_path):
    expected = plain_param_grads(seeded(SparseTables)(), sparse_index())
    assert all(g.is_sparse and not g.is_coalesced() for _, g in expected)
    trace = record_all(seeded(SparseTables)(), sparse_index())
    assert not trace.failed
    got = [e for e in trace.events if e.hook == "param_grad"]
    assert [f"{e.module}.{e.tensors[0].name.removesuffix('.grad')}" for e in got] == [n for n, _ in expected]
    for event, (_, grad) in zip(got, expected):
        record = event.tensors[0]
        rows = grad.coalesce()
        assert record.shape == list(grad.shape) and record.dtype == "float32"
        assert record.layout.kind == "sparse_coo"
        assert record.layout.index == rows.indices().t().tolist()  # the rows touched
        assert record.layout.stored == list(rows.values().shape)
        assert record.values_shape == list(rows.values().shape)
        assert torch.equal(torch.tensor(record.values).reshape(record.values_shape), rows.values())
        assert_stats_of(record, rows.values())
        assert "no stats" not in (record.note or "")
    # The module firings are PyTorch's, value by value.
    assert_same_as_pytorch(seeded(SparseTables), sparse_index, loss_fn=lambda out: out)


# 7. register_multi_grad_hook ---------------------------------------------------------------
class TwoHeads(nn.Module):
    def __init__(self, log: list, mode: str):
        super().__init__()
        self.a, self.b = nn.Linear(3, 3), nn.Linear(3, 3)
        self.log, self.mode = log, mode

    def on_grads(self, grads):
        self.log.append([None if g is None else g.detach().clone() for g in _flat(grads)] if self.mode == "all"
                        else [grads.detach().clone()])

    def forward(self, x):
        h1, h2 = self.a(x), self.b(x)
        register_multi_grad_hook((h1, h2), self.on_grads, mode=self.mode)
        return (h1 * h2 * torch.arange(1.0, 4.0)).sum()


def inputs_2x3() -> torch.Tensor:
    g = torch.Generator().manual_seed(1)
    return torch.randn(2, 3, generator=g)


@pytest.mark.parametrize("mode", ["all", "any"])
def test_multi_grad_hook_is_one_firing_per_call_of_the_users_function(mode):
    torch.manual_seed(0)
    plain_log: list = []
    TwoHeads(plain_log, mode)(inputs_2x3()).backward()
    assert len(plain_log) == 1  # PyTorch calls the function once per backward, in both modes

    torch.manual_seed(0)
    log: list = []
    trace = hooktui.record(TwoHeads(log, mode), inputs_2x3())
    assert trace.error is None
    assert len(log) == 1 and all(torch.equal(a, b) for a, b in zip(log[0], plain_log[0]))
    fired = [e for e in trace.events if e.hook == "user_hook"]
    assert len(fired) == len(plain_log)
    info = fired[0].user_hook.hook
    assert info.function == "TwoHeads.on_grads" and info.kind == "multi_grad" and info.flags == [f"mode={mode}"]
    assert len(fired[0].tensors) == len(plain_log[0])
    for record, tensor in zip(fired[0].tensors, plain_log[0]):
        assert_record_matches(record, tensor)
    assert not any("inner_hook" in note for e in trace.events for note in e.notes)


def test_multi_grad_hook_registered_on_parameters_before_the_run():
    calls, plain = [], []

    def build(log):
        torch.manual_seed(0)
        model = nn.Linear(3, 2)
        register_multi_grad_hook((model.weight, model.bias), lambda grads: log.append([g.clone() for g in grads]))
        return model

    def users_function(model):
        inner = next(iter(model.weight._backward_hooks.values()))  # torch's inner_hook
        return dict(zip(inner.__code__.co_freevars, inner.__closure__))["fn"].cell_contents

    build(plain)(inputs_2x3()).sum().backward()
    model = build(calls)
    fn = users_function(model)
    trace = hooktui.record(model, inputs_2x3())
    fired = [e for e in trace.events if e.hook == "user_hook"]
    assert len(fired) == len(plain) == len(calls) == 1
    assert fired[0].user_hook.hook.kind == "multi_grad" and fired[0].user_hook.hook.flags == ["mode=all"]
    for record, tensor in zip(fired[0].tensors, plain[0]):
        assert_record_matches(record, tensor)
    # Afterwards torch's own tensor hooks call the user's function again, not hooktui's wrapper.
    assert users_function(model) is fn
    model.zero_grad()
    model(inputs_2x3()).sum().backward()
    assert len(calls) == 2


# Trace files keep the layouts ---------------------------------------------------------------
def test_nested_and_sparse_records_round_trip_through_a_trace_file(tmp_path):
    from hooktui.engine.records.trace_file import read_trace_file, write_trace

    for trace in (record_all(seeded(SparseTables)(), sparse_index()), record_all(nested_model(), nested_inputs())):
        path = tmp_path / "t.jsonl"
        write_trace(path, trace.info, trace.events)
        loaded = read_trace_file(path).events
        assert [e.to_dict() for e in loaded] == [e.to_dict() for e in trace.events]
        laid_out = [t for e in loaded for t in e.tensors if t.layout is not None]
        assert laid_out and all(t.values is not None and t.stats is not None for t in laid_out)
    # A dense tensor's line is as it was: no layout key.
    assert '"layout"' not in path.read_text().splitlines()[1]


# torch.func transforms of a module inside the step: PyTorch's own full backward hooks raise
# there, so only the forward firings and the run itself can be compared (README).
class FuncInside(nn.Module):
    def __init__(self, how: str):
        super().__init__()
        self.fc, self.act, self.how = nn.Linear(3, 2), nn.Tanh(), how

    def forward(self, x):
        params = {k: v.detach() for k, v in self.fc.named_parameters()}

        def out(p):
            return torch.func.functional_call(self.fc, p, (x,))

        if self.how == "grad":
            g = torch.func.grad(lambda p: out(p).sum())(params)["weight"]
        elif self.how == "vjp":
            g = torch.func.vjp(out, params)[1](torch.ones(2, 2))[0]["weight"]
        else:
            g = torch.func.jacrev(lambda p: out(p).sum())(params)["weight"]
        return self.act(self.fc(x)).sum() + g.pow(2).sum()


def plain_forward_firings(model: nn.Module, x: torch.Tensor) -> tuple[list, torch.Tensor, dict]:
    """PyTorch's forward hooks only (its full backward hooks raise here): firings, loss, .grads."""
    names = {id(m): n for n, m in model.named_modules()}
    log = []

    def keep(t):  # under the transform a hook gets a wrapper (dead afterwards): the value under it
        while torch._C._functorch.is_functorch_wrapped_tensor(t):
            t = torch._C._functorch.get_unwrapped(t)
        return t.detach().clone()

    handles = [h for m in model.modules() for h in (
        m.register_forward_pre_hook(lambda m, a: log.append(("forward_pre", names[id(m)], [keep(t) for t in _flat(a)]))),
        m.register_forward_hook(lambda m, a, o: log.append(("forward", names[id(m)], [keep(t) for t in _flat(a) + _flat(o)]))),
    )]
    loss = model(x)
    loss.backward()
    for handle in handles:
        handle.remove()
    return log, loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}


@pytest.mark.parametrize("how", ["grad", "vjp", "jacrev"])
def test_torch_func_inside_the_step_forward_firings_as_pytorch_and_run_unchanged(how):
    x = torch.randn(2, 3, generator=torch.Generator().manual_seed(1))
    with_hooks = seeded(FuncInside, how)()
    with_hooks.fc.register_full_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError, match="setup_context"):  # PyTorch's own full backward hooks
        with_hooks(x)

    expected, loss, grads = plain_forward_firings(seeded(FuncInside, how)(), x)
    model = seeded(FuncInside, how)()
    trace = record_all(model, x)
    assert not trace.failed
    root = next(e for e in trace.events if e.hook == "forward" and e.module == "")
    assert root.tensors[-1].values == [loss.item()]
    # The step's gradients, as PyTorch's post-accumulate view of them (record() leaves .grad as it found it).
    param_grads = {f"{e.module}.{e.tensors[0].name.removesuffix('.grad')}": e.tensors[0] for e in trace.events if e.hook == "param_grad"}
    assert param_grads.keys() == grads.keys()
    for name, record in param_grads.items():
        assert_record_matches(record, grads[name])
    forward = [e for e in trace.events if e.hook in ("forward_pre", "forward")]
    assert [(e.hook, e.module) for e in forward] == [(h, m) for h, m, _ in expected]
    for event, (_, _, tensors) in zip(forward, expected):
        for record, tensor in zip(event.tensors, tensors):
            assert_record_matches(record, tensor)
    # The transform's own backward fires too, said to be inside a gradient call in forward.
    inside = [e for e in trace.events if e.phase == "forward" and e.hook.startswith("backward")]
    assert inside and all(any("torch.autograd.grad() called during the forward pass" in n for n in e.notes) for e in inside)
