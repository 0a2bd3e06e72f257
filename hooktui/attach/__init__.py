"""`hooktui attach PID`: the app on a step of a training that is already running.

rendezvous.py: where an armed process listens and who may talk to it; wire.py: the lines
that pass; listener.py: the armed process's side of the socket (a thread blocked in
accept()); client.py: the attacher's. The step itself is the engine's
(engine/run/armed_step.py), driven by hooktui/loop/arm.py; the app talks to it through
hooktui/ui/remote_source.py.
"""
