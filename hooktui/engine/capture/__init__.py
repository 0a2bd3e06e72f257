"""Capture: the hooks hooktui puts on a model, and the firings they make.

The Tracer (tracer.py) hooks every module; beside it, one file a firing kind or a concern:
legacy backward hooks (legacy.py), stepping into a module's nodes (node_steps.py),
parameter gradients (param_grads.py, grad_kinds.py, final_grads.py), the model's own hooks
(user_hooks.py, library_hooks.py), backwards hooktui did not start (backward_calls.py),
outputs (call_outputs.py), the NaN hunt (hunt.py); what each of those files may use of the
tracer, one small Protocol each (host.py); names and call sites (naming.py,
wrappers.py, model_walk.py, source.py, scripted.py); containment of hooktui's own
failures (contain.py, quit.py) and the garbage collector (collector.py).

May import the rooms below it (analysis, summaries, autograd, records); never run, the room
above it.
"""
