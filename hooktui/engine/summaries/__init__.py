"""Summaries: one tensor, as it was at its firing, in a few numbers.

What is taken at the firing (stats.py), turned into statistics on first read
(lazy_stats.py), reduced on the tensor's device (device_reduce.py); DTensors read without a
collective (sharded.py) and the values under a torch.func transform (functorch_values.py).

Imports autograd (a tensor's grad_fn name), records and torch.
"""
