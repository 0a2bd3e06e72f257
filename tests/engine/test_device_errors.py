"""A model file that makes a CPU tensor while the model is on another device: the error says
so and gives the fix (`device=output.device`), not only torch's text.

On this machine (no GPU) the mismatch is real between `meta` and the CPU; CUDA's wording
is given as torch prints it (the messages' fixed parts are in libtorch's own strings)."""

import pytest
import torch
from torch import nn

import hooktui
from hooktui.engine.run.device_errors import advice, mismatched_devices
from hooktui.explain import explain

# What torch says on CUDA for the mistakes the sample models made (issue 22).
CUDA_TEXTS = {
    "nll_loss": "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! "
                "(when checking argument for argument target in method wrapper_CUDA_nll_loss_forward)",
    "addmm": "Expected all tensors to be on the same device, but got mat1 is on cpu, different from other tensors "
             "on cuda:0 (when checking argument in method wrapper_CUDA_addmm)",
    "rnn": "Input and hidden tensors are not at the same device, found input tensor at cuda:0 and hidden tensor at cpu",
    "index": "indices should be either on cpu or on the same device as the indexed tensor (cpu)",
}


@pytest.mark.parametrize("case", sorted(CUDA_TEXTS))
def test_cuda_messages_are_recognised_with_their_devices(case):
    devices = mismatched_devices(CUDA_TEXTS[case])
    assert devices is not None and "cpu" in devices
    text = advice(CUDA_TEXTS[case], in_loss=True)
    assert text.startswith("device mismatch: ") and "device=output.device" in text


def test_the_advice_names_the_devices_and_where_to_fix_it():
    loss = advice(CUDA_TEXTS["nll_loss"], in_loss=True)
    assert "a tensor on the CPU met the model's tensors on cuda:0" in loss and "loss_fn" in loss
    forward = advice(CUDA_TEXTS["rnn"], in_loss=False)
    assert "cuda:0" in forward and "forward" in forward and "device=x.device" in forward


@pytest.mark.parametrize("message", [
    "mat1 and mat2 shapes cannot be multiplied (1x5 and 3x2)",
    "CUDA out of memory. Tried to allocate 2.00 GiB",
    "Expected 4-dimensional input for 4-dimensional weight [8, 3, 3, 3]",
    "the loss must be a tensor, got float",
])
def test_other_errors_get_no_device_advice(message):
    assert mismatched_devices(message) is None and advice(message) is None


class _OnMeta(nn.Module):
    """A model whose tensors are on `meta` (standing in for a GPU)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x)


def _meta_model_and_input():
    return _OnMeta().to("meta"), torch.randn(2, 4).to("meta")


def test_a_real_mismatch_in_loss_fn_gets_the_advice_on_its_error_firing():
    model, x = _meta_model_and_input()
    target = torch.tensor([0, 2])  # made on the CPU, as a model file would
    # What torch says about it, independently of hooktui.
    with pytest.raises(RuntimeError) as raised:
        nn.functional.cross_entropy(model(x), target)
    assert mismatched_devices(str(raised.value)) is not None, str(raised.value)

    trace = hooktui.record(model, x, lambda output: nn.functional.cross_entropy(output, target))
    error = trace.events[-1]
    assert trace.failed and error.hook == "error"
    assert error.notes[0] == f"RuntimeError: {raised.value}"
    assert len(error.notes) == 2 and "device=output.device" in error.notes[1] and "meta" in error.notes[1]
    statements = [s.text for s in explain(error, trace.events, trace.info)]
    assert any("Device mismatch" in s and "device=output.device" in s for s in statements), statements


def test_a_mismatch_in_forward_gets_the_forward_advice():
    class HiddenOnCpu(_OnMeta):
        def forward(self, x):
            return self.fc(x) + torch.zeros(x.shape[0], 3)  # no device=: on the CPU

    model, x = HiddenOnCpu().to("meta"), torch.randn(2, 4).to("meta")
    trace = hooktui.record(model, x)
    error = trace.events[-1]
    assert trace.failed and error.phase == "forward"
    assert any("device=x.device" in note for note in error.notes[1:]), error.notes


def test_an_error_that_is_not_about_devices_keeps_its_one_note():
    model = nn.Linear(4, 3)
    trace = hooktui.record(model, torch.randn(2, 5))
    assert trace.failed and len(trace.events[-1].notes) == 1


def test_hooktui_debug_raises_the_steps_own_error_with_the_advice_as_a_note(monkeypatch, tmp_path):
    monkeypatch.setenv("HOOKTUI_DIR", str(tmp_path))  # no terminal: the step is recorded there
    model, x = _meta_model_and_input()
    target = torch.tensor([0, 2])
    with pytest.raises(RuntimeError) as raised:
        hooktui.debug(model, lambda: nn.functional.cross_entropy(model(x), target))
    assert mismatched_devices(str(raised.value)) is not None  # torch's own error, as the loop would see it
    notes = getattr(raised.value, "__notes__", [])
    assert len(notes) == 1 and notes[0].startswith("hooktui: device mismatch") and "device=" in notes[0]
