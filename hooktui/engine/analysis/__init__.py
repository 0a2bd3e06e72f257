"""Analysis: what records say, decided from the records alone.

Breakpoints and the words that say why a run stopped (breakpoints.py), where a bad value
was born (born.py, births.py), two or more runs side by side (compare.py,
compare_ranks.py), gradient flow (flow.py), and the console's expressions at a firing
(console.py).

Imports only records. Never torch: what needs a live tensor imports it in the function
that gets one (a live firing means torch is already loaded).
"""
