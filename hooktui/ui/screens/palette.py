"""Textual's command palette (ctrl+p), with page keys that wait for its list to have lines.

Textual 8's `OptionList._move_page` (pageup / pagedown) looks up the highlighted option's
first line in an index that `OptionList._update_lines` fills only while the list has a
content region. On a terminal a few lines tall (or while a resize leaves the palette's
list no room) it has none, the index is empty, and a page key crashed the app with
`KeyError: 0` (issue 35). Here the page keys do nothing then, as they would on an empty
list; every other key of the palette is Textual's own.

On a terminal a few columns wide, the palette's list could be laid out narrower than its
options' padding (4 columns): measuring an option's height then wrapped its title into
lines of width 0, and rich raised `ValueError: range() arg 3 must not be zero` (found by
the same storm of keys and resizes). The list keeps a width of its own (MIN_WIDTH), cut off
at the terminal's edge like anything wider than the screen.
"""

from __future__ import annotations

from textual.binding import Binding
from textual.command import CommandList, CommandPalette


MIN_WIDTH = 12  # the options' padding (4), a scrollbar (2) and a few letters


class Palette(CommandPalette):
    DEFAULT_CSS = f"""
    Palette CommandList {{
        min-width: {MIN_WIDTH};
    }}
    """
    BINDINGS = [
        Binding("pagedown", "page(1)", "Next page", show=False),
        Binding("pageup", "page(-1)", "Previous page", show=False),
    ]

    def action_page(self, direction: int) -> None:
        commands = self.query(CommandList)
        if not commands or not commands.first().scrollable_content_region:
            return  # no lines laid out: nothing to page through
        command_list = commands.first()
        (command_list.action_page_down if direction > 0 else command_list.action_page_up)()
