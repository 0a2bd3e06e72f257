"""The app's keys: bindings, what each does (help screen, command palette), and the help rows."""

from __future__ import annotations

from textual.app import App
from textual.binding import Binding
from textual.keys import format_key

BINDINGS = [
    # n / N: the next / previous match while a `/` search is on (vim, less), else as space / p.
    Binding("n", "search_next", "Next", id="hooktui.search.next"),
    Binding("space,f10", "step", "Next", show=False, id="hooktui.next"),
    Binding("s,f11", "step_into", "Into", id="hooktui.step_into"),
    Binding("f", "finish", "Finish", id="hooktui.finish"),
    Binding("c,f5", "resume", "Continue", id="hooktui.continue"),
    Binding("N", "search_previous", "Back", id="hooktui.search.previous"),
    Binding("p", "back", "Back", show=False, id="hooktui.back"),
    Binding("b,f9", "breakpoint", "Break", id="hooktui.breakpoint"),
    Binding("B", "break_backward", "Break bwd", show=False, id="hooktui.break_backward"),
    Binding("exclamation_mark", "break_nonfinite", "Break NaN", show=False, id="hooktui.break_nonfinite"),
    Binding("K", "breakpoints", "Breakpoints", show=False, id="hooktui.breakpoints"),
    Binding("colon", "console", "Console", show=False, id="hooktui.console"),
    Binding("W", "watch", "Watch", show=False, id="hooktui.watch"),
    Binding("g", "first", "First", show=False, id="hooktui.first"),
    Binding("G", "latest", "Latest", show=False, id="hooktui.latest"),
    Binding("number_sign", "goto", "Go to #", show=False, id="hooktui.goto"),
    Binding("j", "jump", "Fwd↔bwd", show=False, id="hooktui.jump"),
    Binding("L", "legacy", "Legacy", show=False, id="hooktui.legacy"),
    Binding("H", "user_hooks", "Your hooks", show=False, id="hooktui.user_hooks"),
    Binding("w", "overview", "Overview", show=False, id="hooktui.overview"),
    Binding("slash", "search", "Search", show=False, id="hooktui.search"),
    Binding("ampersand", "filter", "Filter", show=False, id="hooktui.filter"),
    Binding("escape", "clear_search", "Clear search", show=False, id="hooktui.search.clear_anywhere"),
    Binding("z", "zoom", "Zoom", show=False, id="hooktui.zoom"),
    Binding("S", "save", "Save", show=False, id="hooktui.save"),
    Binding("t", "pane('tensors')", "Tensors pane", show=False, id="hooktui.pane.tensors"),
    Binding("x", "pane('explain')", "Explain pane", show=False, id="hooktui.pane.explain"),
    Binding("v", "pane('values')", "Values pane", show=False, id="hooktui.pane.values"),
    Binding("a", "pane('autograd')", "Autograd pane", show=False, id="hooktui.pane.autograd"),
    Binding("o", "pane('source')", "Source pane", show=False, id="hooktui.pane.source"),
    Binding("left_square_bracket", "slice(-1)", "Previous slice", show=False, id="hooktui.slice.previous"),
    Binding("right_square_bracket", "slice(1)", "Next slice", show=False, id="hooktui.slice.next"),
    Binding("left_curly_bracket", "outer_slice(-1)", "Previous outer slice", show=False, id="hooktui.slice.outer_previous"),
    Binding("right_curly_bracket", "outer_slice(1)", "Next outer slice", show=False, id="hooktui.slice.outer_next"),
    Binding("e", "show_error", "Show the error", show=False, id="hooktui.error"),
    Binding("question_mark,f1", "help", "Help", id="hooktui.help"),
    Binding("R", "restart", "Restart", show=False, id="hooktui.restart"),
    Binding("q", "quit", "Quit", id="hooktui.quit"),
]

# Descriptions for the help screen and the command palette, in BINDINGS order.
HELP = {
    "search_next": "next firing; in a / search: the next match",
    "step": "next firing (walks back up the history first)",
    "step_into": "step into the autograd nodes of this module's backward (at backward_pre; else next)",
    "finish": "finish: run to the backward firing of this module call",
    "resume": "continue to the next breakpoint or the end",
    "search_previous": "previous firing; in a / search: the previous match",
    "back": "previous firing (history)",
    "breakpoint": "toggle a breakpoint on the module (tree selection, else the current one)",
    "break_backward": "toggle a break when backward starts",
    "break_nonfinite": "toggle a break at the first NaN/Inf where a gradient flows (c stops there and says where it was born)",
    "breakpoints": "breakpoints: hit counts, on/off, delete, add a value breakpoint (norm > 1e3, if EXPR, ...)",
    "console": "console: evaluate a Python expression at this firing (grad_output[0].norm(), ...)",
    "watch": "watch an expression at every firing (d removes it)",
    "first": "first firing",
    "latest": "latest firing",
    "goto": "go to firing #N (the number trace, diff, Explain and the guard cite)",
    "jump": "jump between a backward firing and its forward firing (and back)",
    "legacy": "show or hide the legacy register_backward_hook firings",
    "user_hooks": "your hooks: every hook the model registered itself, hit counts, b to break on one",
    "overview": "overview: gradient flow of every module call, live",
    "search": "search (module, kind:KIND, tensor:NAME, nan, inf): n / N go from match to match; escape ends it",
    "filter": "filter: list only the firings of matching modules (escape clears)",
    "zoom": "zoom the focused pane to the whole screen (z or escape: back)",
    "save": "save the firings so far to a trace file (for hooktui view and diff)",
    "pane('tensors')": "show the tensors pane",
    "pane('explain')": "show the explain pane (what this firing means)",
    "pane('values')": "show the values pane",
    "pane('autograd')": "show the autograd pane",
    "pane('source')": "show the source pane",
    "slice(-1)": "values: previous 2-D slice",
    "slice(1)": "values: next 2-D slice",
    "outer_slice(-1)": "values: previous index of the outermost dim",
    "outer_slice(1)": "values: next index of the outermost dim",
    "show_error": "show the model's exception again",
    "help": "this help",
    "restart": "restart: run the model again from its first firing, breakpoints kept (hooktui MODEL.py)",
    "quit": "quit (stops the model at once)",
}


def _key_name(key: str) -> str:
    return key.upper() if key[:1] == "f" and key[1:].isdigit() else format_key(key)


def key_help(app: App) -> list[tuple[str, str, str]]:
    """(keys, description, action) for every app binding, after any keymap."""
    bindings_map = app._bindings.copy()
    if app._keymap:
        bindings_map.apply_keymap(app._keymap)
    keys: dict[str, list[str]] = {}
    for key, bindings in bindings_map.key_to_bindings.items():
        for binding in bindings:
            names = keys.setdefault(binding.action, [])
            if key not in names:
                names.append(key)
    out = []
    for action, description in app.HELP.items():
        if action in keys:
            out.append((", ".join(_key_name(k) for k in keys[action]), description, action))
    return out
