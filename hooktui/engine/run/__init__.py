"""Run: one run of a model under hooktui, from loading it to its last firing.

The session (session.py) and its pause gate (gate.py), the run's lifecycle that the
session and `hooktui.guard` share (lifecycle.py: hooks on, hooks off, what is let go), loading a model file (loader.py)
and its inputs (inputs.py), one run at a time (one_run.py), leaving the model as it was
found (preserve.py), the caller's torch state on the worker thread (thread_state.py), and
what to say when a model mixes devices (device_errors.py).

The top room: may import every room below it.
"""
