"""`hooktui serve`'s web side, around textual-serve: the check in front of every request
(guard.py), the server that runs at most N app processes and never logs the token
(server.py), and the token file for scripts (token_file.py). Imports aiohttp: only `serve`
loads it."""
