"""The Textual UI. It renders plain Event records (engine/records/records.py) and never touches
torch: a live Session and a recorded trace look the same to it (see sources.py)."""
