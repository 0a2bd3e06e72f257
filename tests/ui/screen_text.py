"""The characters on an app's screen, row by row (read from its SVG screenshot's cells)."""

from __future__ import annotations

import tempfile

from svg_cells import cells, row_text


def screen_rows(app) -> list[str]:
    width, height = app.size
    with tempfile.NamedTemporaryFile("w", suffix=".svg") as f:
        f.write(app.export_screenshot())
        f.flush()
        _, fg = cells(f.name)
    return [row_text(fg, row, width) for row in range(height)]
