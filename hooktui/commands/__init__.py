"""One module per `hooktui` command; cli.py parses and dispatches."""
