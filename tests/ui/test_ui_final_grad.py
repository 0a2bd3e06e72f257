"""A final_grad firing (the .grad a DDP model's optimizer uses, read once the backward has
returned) in the app at 80x24: the run pauses there like at any firing, and the timeline
row, the tensor and the note say what it is."""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn

from hooktui.engine.analysis.breakpoints import Breakpoint
from hooktui.engine.run.session import Session
from hooktui.ui.app import HooktuiApp
from hooktui.ui.sources import LiveSource

from screen_text import screen_rows
from ui_helpers import paused_at_start, run, wait_for


def test_the_app_pauses_at_a_final_grad_and_shows_it_readable_at_80x24(tmp_path):
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        torch.manual_seed(0)
        model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2)))
        session = Session(model, torch.linspace(-1, 1, 8).reshape(2, 4))
        session.add_breakpoint(Breakpoint.on_module("*", hook="final_grad"))
        expected = {}

        async def script():
            app = HooktuiApp(LiveSource(session), show_timings=False)
            async with paused_at_start(app) as pilot:
                await pilot.press("c")
                await wait_for(pilot, lambda: app.state == "paused" and app.current.hook == "final_grad", "the final_grad")
                # The screen drawn for it: the app's state changes before its next paint, and a
                # pause of the pilot alone was not always enough under load (read before, twice).
                await wait_for(pilot, lambda: any(f"▶{app.current.number} " in r for r in screen_rows(app)), "the row drawn")
                event = app.current
                (tensor,) = event.tensors
                expected.update(target=tensor.target, shape=tensor.shape)
                for _, param in model.named_parameters():  # paused after the backward: .grad is final
                    expected.setdefault("grads", []).append(param.grad.clone())
                rows = screen_rows(app)
                text = " ".join(" ".join(r.split()) for r in rows)
                # The timeline's row (80 columns: number, hook, module, call, shape), the status
                # line, the tensor with its parameter, and the note saying which gradient it is.
                row = next(r for r in rows if f"▶{event.number} " in r)
                assert row.split("▶", 1)[1].split() == [event.number, "final_grad", "0", "0", "(3,", "4)"], rows
                assert f"#{event.number} 0 call 0 final_grad" in text, rows
                assert any(r.split()[:4] == ["weight.grad", "→", "0.weight", "(3,"] for r in rows if r.strip()), rows
                assert ("note the final .grad after the backward: DDP's average over the 1 rank, what the optimizer uses "
                        "(the param_grad firing showed this rank's own gradient)") in text, rows
                await pilot.press("c")
                await wait_for(pilot, lambda: app.state == "paused" and app.history.cursor == len(app.history) - 1
                               and app.current.hook == "final_grad" and app.current.tensors[0].target == "0.bias", "0.bias")
                await pilot.press("c", "c", "c")
                await wait_for(pilot, lambda: app.state == "finished", "the end")
                finals = [e for e in app.history.events if e.hook == "final_grad"]
                assert [e.tensors[0].target for e in finals] == ["0.weight", "0.bias", "2.weight", "2.bias"]

        run(script())
        assert expected["target"] == "0.weight" and expected["shape"] == [3, 4]
        # The run is a plain one: record restores .grad (None before it), and the pause saw DDP's.
        assert all(p.grad is None for p in model.parameters())
        model(torch.linspace(-1, 1, 8).reshape(2, 4)).sum().backward()
        assert all(torch.equal(a, p.grad) for a, p in zip(expected["grads"], model.parameters()))
    finally:
        dist.destroy_process_group()
