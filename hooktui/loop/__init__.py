"""hooktui inside the user's own training loop: `hooktui.debug` on one step, `hooktui.guard`
around many, and where their output goes (the app, or a trace file when no terminal is
attached or another rank owns it). The engine knows nothing of this; it runs Sessions."""
