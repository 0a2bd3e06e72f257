"""The command palette's commands (ctrl+p): every key's action, then those of Textual's own
that work here. Textual's "Keys" opens a help panel docked in the main screen: escape does not
close it and `q` there quits the app (`?` is the help). Its "Screenshot" saves into
~/Downloads, which a server often lacks ("Failed to save screenshot"): ours saves into the
current directory and says where."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from textual.app import App, SystemCommand
from textual.markup import escape as escape_markup
from textual.screen import Screen

from .keys import key_help
from .screens.notices import NoticesScreen

REPLACED = {"Quit", "Keys", "Screenshot"}  # ours say what quitting does, `?` is the help


def palette_commands(app: App, screen: Screen, textual_commands: Iterable[SystemCommand]) -> Iterable[SystemCommand]:
    for keys, description, action in key_help(app):
        name = action.partition("(")[0]
        if app.available(name) is not True:
            continue
        # The palette reads titles and help as markup: escape them (`[` is a key).
        title, help_text = escape_markup(f"{description[0].upper()}{description[1:]}"), escape_markup(f"key: {keys}")
        yield SystemCommand(title, help_text, lambda a=action: app.run_action(a))
    yield from (command for command in textual_commands if command.title not in REPLACED)
    yield SystemCommand("Screenshot", "Save an SVG picture of the screen in the current directory", screenshot_later(app))
    said = getattr(app, "notices_said", None)
    if said is not None:
        yield SystemCommand("Notices", "The last notices, whole, newest first", lambda: app.push_screen(NoticesScreen(said)))


def screenshot_later(app: App) -> Callable[[], None]:
    # Later: the palette must be gone from the picture.
    return lambda: app.set_timer(0.1, lambda: save_screenshot(app))


def save_screenshot(app: App) -> str | None:
    """The screen as SVG: in a browser (`hooktui serve`) a download, else a file in the current
    directory. Returns the file's path (None in a browser or on failure, which is notified)."""
    if app.is_web:
        app.deliver_screenshot()
        return None
    try:
        path = app.save_screenshot(path=os.getcwd())
    except OSError as exc:
        app.notify(f"could not save the screenshot in {os.getcwd()}: {exc.strerror or exc}", title="screenshot",
                   severity="error", markup=False)
        return None
    app.notify(f"saved {path}", title="screenshot", markup=False)
    return path
