"""A Lightning fit for the attach test: `python armed_lightning_worker.py OUT [--no-arm]`
(or `main(OUT, armed=False)` in the test's process, the twin).

HooktuiCallback(arm=True) arms the LightningModule when training starts (unless --no-arm);
a callback after it then writes OUT/pid and waits for OUT/go (so that the test attaches
before step 0, however loaded the machine). PyTorch's own hooks write, for each step, the sum
of fc1's output and of fc1.weight's gradient to OUT/hook.json; at the end the parameters and
the optimizer's state go to OUT/final.pt."""

import json
import os
import sys
import time
from pathlib import Path

import lightning.pytorch as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from hooktui.integrations.lightning import HooktuiCallback

STEPS = 4


class Tiny(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.act = nn.Tanh()
        self.fc2 = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return ((self(x) - y) ** 2).mean()  # self(x): a call of the armed module, a step to hooktui.arm

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1, momentum=0.9)


class WaitForTheTest(L.Callback):
    def __init__(self, out: Path, armed: bool) -> None:
        self.out, self.armed = out, armed

    def on_train_start(self, trainer, pl_module) -> None:
        (self.out / "pid.tmp").write_text(str(os.getpid()))
        os.replace(self.out / "pid.tmp", self.out / "pid")
        deadline = time.monotonic() + 120
        while self.armed and not (self.out / "go").exists() and time.monotonic() < deadline:
            time.sleep(0.02)


def main(out: Path, armed: bool) -> None:
    torch.set_num_threads(1)
    L.seed_everything(0, verbose=False)
    model = Tiny()
    seen: dict[str, list[float]] = {"output": [], "weight_grad": []}
    model.fc1.register_forward_hook(lambda m, args, output: seen["output"].append(float(output.sum())))
    model.fc1.weight.register_hook(lambda grad: seen["weight_grad"].append(float(grad.sum())))
    generator = torch.Generator().manual_seed(1)
    data = DataLoader(TensorDataset(torch.randn(3 * STEPS, 4, generator=generator), torch.randn(3 * STEPS, 2, generator=generator)),
                      batch_size=3)
    callbacks = ([HooktuiCallback(arm=True)] if armed else []) + [WaitForTheTest(out, armed)]
    trainer = L.Trainer(max_steps=STEPS, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, default_root_dir=out, callbacks=callbacks)
    trainer.fit(model, data)
    assert not model._forward_pre_hooks, "hooktui.arm's hook is still on the model"
    (out / "hook.json").write_text(json.dumps(seen))
    torch.save({"params": model.state_dict(), "optimizer": trainer.optimizers[0].state_dict()}, out / "final.pt")


if __name__ == "__main__":
    main(Path(sys.argv[1]), armed="--no-arm" not in sys.argv)
