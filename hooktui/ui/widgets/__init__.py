"""The panes of the debugger, one widget per file."""
