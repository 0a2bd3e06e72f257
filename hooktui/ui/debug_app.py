"""The app on one step of the user's own program (`hooktui.debug`): the same debugger,
whose `q` says what it does to the program (the title, from the session's label, says
where the program called it)."""

from __future__ import annotations

from textual import on

from .app import HooktuiApp
from .messages import StateChanged

QUIT_HELP = {
    "raise": "quit: stop the step; hooktui.debug raises hooktui.Quit in your program (after the step ended: returns the loss)",
    "return": "quit: the rest of the step runs without pausing, then hooktui.debug returns the loss to your program",
}


class DebugApp(HooktuiApp):
    def __init__(self, *, call_site: str, on_quit: str = "raise", **kwargs) -> None:
        super().__init__(**kwargs)
        self.call_site = call_site
        self.HELP = {**self.HELP, "quit": QUIT_HELP[on_quit]}

    @on(StateChanged)
    def _step_done(self, message: StateChanged) -> None:
        if message.state == "finished":
            self.notify(f"q returns to your program at {self.call_site}: hooktui.debug returns the loss", title="step done", markup=False)
        elif message.state == "failed":
            self.notify(f"q returns to your program at {self.call_site}, which gets the step's exception", title="step failed", markup=False)
