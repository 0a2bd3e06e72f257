"""A model whose loss_fn makes its target on the CPU while the model is elsewhere (`meta`
here, a GPU in real life): the app's error screen says it is a device mismatch and how to
fix it, not only torch's text."""

import torch
from torch import nn

from hooktui.engine.run.session import Session
from hooktui.ui.app import HooktuiApp
from hooktui.ui.sources import LiveSource
from hooktui.ui.screens.error import ErrorScreen
from ui_helpers import paused_at_start, run, wait_for


def test_error_screen_gives_the_device_fix():
    model, x = nn.Linear(4, 3).to("meta"), torch.randn(2, 4).to("meta")
    session = Session(model, x, lambda output: nn.functional.cross_entropy(output, torch.tensor([0, 2])))
    app = HooktuiApp(LiveSource(session), show_timings=False)
    shown = {}

    async def script():
        async with paused_at_start(app, size=(100, 30)) as pilot:
            await pilot.press("c")
            # The screen, then its content: under load the screen is pushed before it is composed.
            await wait_for(pilot, lambda: isinstance(app.screen, ErrorScreen) and app.screen.query("#error-head"), "the error screen")
            shown["head"] = str(app.screen.query_one("#error-head").render())
            await pilot.press("escape", "q")

    run(script())
    head = shown["head"]
    assert "RuntimeError" in head
    assert "device mismatch: a tensor on the CPU met the model's tensors on meta" in head
    assert "device=output.device" in head
