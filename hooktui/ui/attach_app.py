"""The app on a step of another process (`hooktui attach PID`): the same debugger, whose `q`
detaches (the training goes on) and whose title says which process and step it is."""

from __future__ import annotations

from textual import on

from .app import HooktuiApp
from .messages import StateChanged

QUIT_HELP = "quit: detach; the step runs on without pausing, every hook of hooktui's comes off, the training goes on"


class AttachApp(HooktuiApp):
    def __init__(self, *, where: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.where = where
        self.HELP = {**self.HELP, "quit": QUIT_HELP}

    @on(StateChanged)
    def _step_done(self, message: StateChanged) -> None:
        if message.state == "finished":
            self.notify(f"the step is done and {self.where} trains on (hooktui's hooks are off); q closes the app",
                        title="step done", markup=False)
        elif message.state == "failed":
            why = getattr(self.source, "ended_why", None) or "the step failed"
            self.notify(why, title="detached", severity="error", markup=False)
