"""The one exception a firing raises on purpose: the gate's way to abort the run.

The gate (engine/run/gate.py) raises it inside a hook when the user quits; every hook
hooktui installs lets it through (contain.py), and so do the wrappers of the model's own
hooks (user_hooks.py). Here, in the room below the gate, so that capture never imports upward.
"""


class QuitRequested(BaseException):
    """Raised inside a hook to abort the run. A BaseException so a model's own
    `except Exception` cannot swallow it."""
