"""Autograd nodes: reading PyTorch's graph and hooking its nodes.

A node's name, inputs and saved tensors (nodes.py), what each of its gradients stands for
(node_inputs.py), one hook per node shared by many watchers (node_hooks.py), and whether a
node was made during a module call (placement.py, with grad_origins.py for nodes a
create_graph backward built and thread_calls.py for calls on other threads).

Imports records and torch.
"""
