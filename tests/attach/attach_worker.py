"""A training loop for the attach tests: `python attach_worker.py OUT [--no-arm]`.

Arms its model (unless --no-arm), writes OUT/pid once armed, waits for OUT/go (so that a
test can attach before step 0, however loaded the machine), then trains STEPS steps of SGD
with momentum. A plain PyTorch forward hook of its own writes, for each step, the sum of
fc1's output (and a tensor hook the sum of fc1.weight's gradient) to OUT/hook.json: what the test checks the attached app's firing against. At
the end the parameters and the optimizer's state go to OUT/final.pt.
"""

import json
import os
import sys
import time
from pathlib import Path

import torch
from torch import nn

STEPS = 6


def main() -> None:
    out = Path(sys.argv[1])
    armed = "--no-arm" not in sys.argv
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential()
    model.add_module("fc1", nn.Linear(4, 8))
    model.add_module("act", nn.Tanh())
    model.add_module("fc2", nn.Linear(8, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    seen: dict[str, list[float]] = {"output": [], "weight_grad": []}
    model.fc1.register_forward_hook(lambda m, args, output: seen["output"].append(float(output.sum())))
    model.fc1.weight.register_hook(lambda grad: seen["weight_grad"].append(float(grad.sum())))
    if armed:
        import hooktui

        hooktui.arm(model)
    (out / "pid.tmp").write_text(str(os.getpid()))
    os.replace(out / "pid.tmp", out / "pid")
    deadline = time.monotonic() + 120
    while armed and not (out / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    generator = torch.Generator().manual_seed(1)
    for _ in range(STEPS):
        x = torch.randn(3, 4, generator=generator)
        y = torch.randn(3, 2, generator=generator)
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
    (out / "hook.json").write_text(json.dumps(seen))
    torch.save({"params": model.state_dict(), "optimizer": optimizer.state_dict()}, out / "final.pt")


if __name__ == "__main__":
    main()
