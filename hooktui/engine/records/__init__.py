"""Records: the plain facts of a run, and the files they are kept in.

A firing's record (records.py), the model's own hooks (user_hook_records.py), trace files
(trace_file.py), a long run's firings held packed (held.py), the source lines a record points at (source_lines.py), the rank a trace
came from (ranks.py) and the short text a record reads as (format.py).

The bottom room: imports nothing else of hooktui, and never torch or Textual, so that
`hooktui view` and `hooktui diff` run with neither.
"""
