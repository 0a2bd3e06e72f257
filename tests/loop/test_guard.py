"""`hooktui.guard` around a training loop: it raises at the first bad value of the right
step, naming the module call and firing where it was born (the cases of the hunt issue);
it changes nothing the loop computes and leaves nothing on the model; it saves the step's
firings to a file that `hooktui view` opens at that firing."""

from __future__ import annotations

import asyncio
import importlib.util
import math

import pytest
import torch
from torch import nn

import hooktui
import hooktui.loop.where
from hooktui.engine.records.trace_file import read_trace_file
from hooktui.ui.app import HooktuiApp
from loop_helpers import SAMPLES, hook_dicts, tensor_hooks, use_pilot, wait_for
from nan_models import ZeroVarianceNorm, fp16_overflow_model, line_of, zero_variance_model


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"guard_sample_{name}", SAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def loop(model, batches, loss_fn, **options):
    """A plain training loop under the guard; the error, or None."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    try:
        with hooktui.guard(model, **options):
            for x in batches:
                optimizer.zero_grad()
                loss_fn(model(x)).backward()
                optimizer.step()
    except hooktui.GuardError as error:
        return error
    return None


# -- the born cases of the hunt issue ------------------------------------------------------
class LogHead(nn.Module):
    def forward(self, p):
        return torch.log(p)  # log(0) = -Inf


def test_log_of_zero_in_forward_at_the_step_it_happens():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 3), nn.Softmax(dim=-1), LogHead())
    batches = [torch.randn(4, 3), torch.randn(4, 3), torch.randn(4, 3) * 1e4, torch.randn(4, 3)]
    # Independent: plain torch says which batch first gives a non-finite log-probability.
    with torch.no_grad():
        first = next(i for i, x in enumerate(batches) if not torch.isfinite(model(x)).all())
    error = loop(model, batches, lambda out: out.clamp(min=-50).sum())
    assert isinstance(error, hooktui.NonFiniteError) and error.step == first == 2
    assert (error.born.phase, error.born.module, error.born.tensor) == ("forward", "2", "output")
    assert "-Inf" in error.born.what
    assert f"test_guard.py:{line_of(LogHead, 'torch.log(p)')}" in str(error)


def test_sqrt_of_zero_in_backward_names_the_node():
    sample = load("nan_hunt")
    model = sample.build_model()
    error = loop(model, [sample.example_inputs()], sample.loss_fn)
    assert isinstance(error, hooktui.NonFiniteError) and error.step == 0
    assert error.born.phase == "backward" and error.born.module == "blocks.2.norm"
    assert "SqrtBackward0" in str(error) and "1/(2·sqrt(x))" in str(error)
    source = (SAMPLES / "nan_hunt.py").read_text().splitlines()
    assert f"nan_hunt.py:{next(i for i, l in enumerate(source, 1) if 'torch.sqrt(ms)' in l)}" in str(error)
    events = read_trace_file(error.trace_path).events
    assert events[-1].index == error.index and events[-1].hook == "node"


def test_division_by_a_zero_variance():
    error = loop(zero_variance_model(), [torch.randn(3, 2)], lambda out: out.sum())
    assert (error.born.module, error.born.tensor, error.born.phase) == ("1", "output", "forward")
    assert "NaN" in error.born.what and f":{line_of(ZeroVarianceNorm, 'x.std()')}:" in str(error)


def test_fp16_overflow():
    model = fp16_overflow_model()
    x = torch.ones(1, 4, dtype=torch.float16)
    assert torch.isfinite(model[0](x)).all() and not torch.isfinite(model(x)).all()  # 1200, then 1.44e6 > 65504
    error = loop(model, [x], lambda out: out.float().clamp(max=1).sum())
    assert (error.born.module, error.born.tensor) == ("1", "output") and "65504" in str(error)


def test_exploding_gradient_with_a_threshold():
    model = nn.Sequential(*[nn.Linear(4, 4, bias=False) for _ in range(100)])
    with torch.no_grad():
        for layer in model:
            layer.weight.copy_(torch.eye(4) * 1.2)
    # Tiny inputs keep the activations (and so the weights' gradients) small: only the
    # gradient flowing back through the layers explodes.
    x = torch.full((1, 4), 1.2**-100, requires_grad=True)
    error = loop(model, [x], lambda out: out.sum(), max_grad_norm=1e3)
    assert isinstance(error, hooktui.ThresholdError) and not isinstance(error, hooktui.NonFiniteError)
    # Independent: the gradient at layer i's input has norm 2 * 1.2 ** (100 - i) (the weights'
    # gradients stay at 4 / 1.2); backward runs from layer 99 down, so the first above the
    # bound is the highest such i.
    first = max(i for i in range(100) if 2 * 1.2 ** (100 - i) > 1e3)
    assert (error.born.module, error.born.tensor) == (str(first), "grad_input[0]")
    assert "norm" in error.born.what


def test_a_grad_already_nan_from_outside():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 2))
    model[0].weight.grad = torch.full((2, 3), math.nan)  # left by code outside the loop, never zeroed
    with pytest.raises(hooktui.NonFiniteError) as caught, hooktui.guard(model):
        model(torch.ones(1, 3)).sum().backward()
    assert caught.value.born.phase == "backward" and "before this backward started" in str(caught.value)
    assert "0.weight" in str(caught.value)


# -- the loop around it ----------------------------------------------------------------------
def test_train_loop_sample_stops_at_the_step_its_loss_goes_nan(tmp_path):
    sample = load("train_loop")
    plain = sample.train(40, log=lambda line: None)
    first_nan = next(i for i, loss in enumerate(plain) if not math.isfinite(loss))  # independent of hooktui
    with pytest.raises(hooktui.NonFiniteError) as caught:
        sample.train(40, guard=True, log=lambda line: None)
    error = caught.value
    assert error.step == first_nan
    assert (error.born.phase, error.born.module, error.born.tensor) == ("forward", "criterion", "output")
    source = (SAMPLES / "train_loop.py").read_text().splitlines()
    log_line = next(i for i, l in enumerate(source, 1) if "torch.log(1 - p)" in l)
    assert f"train_loop.py:{log_line}" in str(error)
    # The file holds this step's firings only, numbered from 0, and view opens at the stop.
    loaded = read_trace_file(error.trace_path)
    assert loaded.events[0].index == 0 and loaded.events[-1].index == error.index
    assert loaded.info.stopped_at == error.index
    assert any("hooktui.guard stopped here" in note for note in loaded.events[-1].notes)

    async def view():
        app = HooktuiApp(recorded=(loaded.info, loaded.events), sources=loaded.sources, show_timings=False)
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            await wait_for(pilot, lambda: app.current is not None, "the first render")
            assert app.current.index == error.index

    asyncio.run(view())


def test_the_loop_trains_exactly_as_without_the_guard_and_nothing_stays():
    sample = load("train_loop")
    plain = sample.train(30, log=lambda line: None)
    model = sample.build_model()
    hooks_before, tensor_hooks_before = hook_dicts(model), tensor_hooks(model)
    assert sample.train(30, guard=True, log=lambda line: None) == plain  # all finite before step 36
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with hooktui.guard(model) as guarding:
        for x, y in sample.loader():
            optimizer.zero_grad()
            model(x, y).backward()
            optimizer.step()
            with torch.no_grad():
                model(x)  # an evaluation forward: a step of its own
    assert guarding.step == 2 * len(sample.loader())
    assert hook_dicts(model) == hooks_before and tensor_hooks(model) == tensor_hooks_before
    assert not any(type(m).__name__ == "CreationLines" for m in torch.overrides._get_current_function_mode_stack())


def test_caught_errors_let_the_loop_go_on_with_the_next_step():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 2), LogHead())
    good, bad = torch.full((1, 2), 0.5), torch.full((1, 2), -1.0)  # log of a negative: NaN
    with torch.no_grad():
        model[0].weight.copy_(torch.eye(2))
        model[0].bias.zero_()
    steps = []
    with hooktui.guard(model):
        for x in (good, bad, good, bad):
            try:
                model(x).sum().backward()
                steps.append("ok")
            except hooktui.NonFiniteError as error:
                steps.append(error.step)
    assert steps == ["ok", 1, "ok", 3]
    assert hook_dicts(model) == []


@pytest.mark.parametrize("inf", [True, False])
def test_inf_false_lets_an_inf_through_and_stops_at_the_nan(inf):
    """log([0, 1]) is [-Inf, 0] in forward; clamped in the loss, the gradient reaching log is
    [0, 1], and log's backward computes 0/0 = NaN."""
    model = nn.Sequential(nn.Linear(2, 2), LogHead())
    with torch.no_grad():
        model[0].weight.copy_(torch.eye(2))
        model[0].bias.zero_()
    error = loop(model, [torch.tensor([[0.0, 1.0]])], lambda out: out.clamp(min=-1).sum(), inf=inf)
    if inf:
        assert (error.born.phase, error.born.module, error.born.what) == ("forward", "1", "1 -Inf")
    else:
        assert (error.born.phase, error.born.module, error.born.what) == ("backward", "1", "1 NaN")
        assert "LogBackward0" in str(error) and "1/x" in str(error)


def test_on_error_debug_opens_the_app_at_the_firing_then_raises(monkeypatch):
    seen = []

    async def script(pilot):
        app = pilot.app
        await wait_for(pilot, lambda: app.current is not None, "the first render")
        seen.append((app.current.module, app.current.hook, app.state))
        await pilot.press("q")

    use_pilot(monkeypatch, script)
    model = nn.Sequential(nn.Linear(2, 2), LogHead())
    with torch.no_grad():
        model[0].weight.copy_(-torch.eye(2))
    with pytest.raises(hooktui.NonFiniteError), hooktui.guard(model, on_error="debug"):
        model(torch.ones(1, 2)).sum().backward()
    assert seen == [("1", "forward", "replay")]


def test_bad_options():
    model = nn.Linear(1, 1)
    with pytest.raises(ValueError, match="on_error"):
        hooktui.guard(model, on_error="ignore")
    with pytest.raises(TypeError, match="nn.Module"):
        hooktui.guard(lambda: 1)


def test_debug_inside_a_guard_takes_that_step_and_the_guard_goes_on(monkeypatch):
    monkeypatch.setattr(hooktui.loop.where, "terminal_attached", lambda: False)
    model = nn.Sequential(nn.Linear(2, 2), LogHead())
    with torch.no_grad():
        model[0].weight.copy_(torch.eye(2))
        model[0].bias.fill_(1.0)
    good, bad = torch.full((1, 2), 0.5), torch.full((1, 2), -3.0)  # log(-2): NaN
    with hooktui.guard(model) as guarding:
        model(good).sum().backward()
        loss = hooktui.debug(model, lambda: model(bad).sum())  # a NaN, but debug's step: recorded, not raised
        assert math.isnan(loss.item())
        with pytest.raises(hooktui.NonFiniteError) as caught:
            model(bad).sum().backward()
    assert caught.value.step == 2 and guarding.step == 3
    assert hook_dicts(model) == []
    with pytest.raises(RuntimeError, match="already guarded"), hooktui.guard(model), hooktui.guard(model):
        pass


def test_a_causal_mask_passes_the_guard_and_the_loop_trains_as_without_it():
    """The additive -inf mask a GPT block passes into attention is not a bad value; every
    step runs, with the parameters a plain loop gives."""

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
            self.out = nn.Linear(8, 1)

        def forward(self, x):
            mask = torch.full((x.shape[1], x.shape[1]), float("-inf")).triu(1)
            return self.out(self.attn(x, x, x, attn_mask=mask, need_weights=False)[0])

    torch.manual_seed(0)
    guarded = Block()
    plain = Block()
    plain.load_state_dict(guarded.state_dict())
    batches = [torch.randn(2, 5, 8) for _ in range(3)]
    assert loop(guarded, batches, lambda out: out.square().mean()) is None
    optimizer = torch.optim.SGD(plain.parameters(), lr=0.01)
    for x in batches:
        optimizer.zero_grad()
        plain(x).square().mean().backward()
        optimizer.step()
    for a, b in zip(guarded.parameters(), plain.parameters()):
        assert torch.equal(a, b)



def test_the_guard_s_debug_app_is_collected_before_a_later_run(monkeypatch):
    """on_error="debug" opens an app on the recorded firings; once closed it is garbage with
    cycles (its history). A later run in the program (a debug step, a guard going on)
    freezes the collector as it starts (engine/capture/collector.py): the app must be gone
    by then, not frozen beside that run."""
    import weakref

    from loop_helpers import continue_then_quit

    opened: list = []

    async def quit_at_once(pilot):
        await wait_for(pilot, lambda: pilot.app.current is not None, "the first render")
        await pilot.press("q")

    use_pilot(monkeypatch, quit_at_once, opened)
    model = nn.Sequential(nn.Linear(2, 2), LogHead())
    with torch.no_grad():
        model[0].weight.copy_(-torch.eye(2))
    with pytest.raises(hooktui.NonFiniteError), hooktui.guard(model, on_error="debug"):
        model(torch.ones(1, 2)).sum().backward()
    guard_app = weakref.ref(opened.pop())
    alive_in_next_run: list[bool] = []

    def step():
        alive_in_next_run.append(guard_app() is not None)
        return model(torch.full((1, 2), -0.5)).sum()

    use_pilot(monkeypatch, continue_then_quit, opened)
    hooktui.debug(model, step)
    assert alive_in_next_run == [False]
