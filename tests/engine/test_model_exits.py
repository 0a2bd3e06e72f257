"""sys.exit() and KeyboardInterrupt raised by the model are recorded like any model error,
while it loads, in forward, in the loss and in backward: they never end hooktui."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import hooktui
from hooktui.engine.run.loader import LoadError, load_target


class Raises(nn.Module):
    def __init__(self, where: str, exc: BaseException):
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(2, 1)
        self.where, self.exc = where, exc

    def forward(self, x):
        if self.where == "forward":
            raise self.exc
        y = self.fc(x)
        if self.where == "backward":
            y.register_hook(self._raise)
        return y

    def _raise(self, grad):
        raise self.exc


EXCEPTIONS = [pytest.param(lambda: SystemExit(3), id="sys.exit"), pytest.param(KeyboardInterrupt, id="KeyboardInterrupt")]


@pytest.mark.parametrize("make", EXCEPTIONS)
@pytest.mark.parametrize("where", ["forward", "backward", "loss"])
def test_recorded_as_the_model_error(where, make):
    exc = make()

    def loss_fn(output):
        if where == "loss":
            raise exc
        return output.sum()

    trace = hooktui.record(Raises(where, exc), torch.ones(1, 2), loss_fn)
    assert trace.failed and trace.error.type == type(exc).__name__
    last = trace.events[-1]
    assert last.hook == "error" and last.phase == ("forward" if where == "forward" else "backward")


@pytest.mark.parametrize("code", ["import sys; sys.exit(1)", "raise KeyboardInterrupt"])
def test_while_loading_it_is_a_load_error(tmp_path, code):
    path = tmp_path / "m.py"
    path.write_text(code + "\n")
    with pytest.raises(LoadError, match="raised while loading: (SystemExit|KeyboardInterrupt)"):
        load_target(path)


def test_a_folder_is_not_a_model_file(tmp_path):
    with pytest.raises(LoadError, match="is a folder"):
        load_target(tmp_path)
