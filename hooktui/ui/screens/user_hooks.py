"""The Hooks screen: every hook the model, its user and its libraries registered, with how
often each has fired so far. `b` breaks when the selected hook fires; escape closes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from ...engine.records.records import Event, firings_with_user_hook
from ...engine.records.user_hook_records import UserHookInfo

COLUMNS = ("", "hook", "kind", "on", "defined at", "hits")


def hit_counts(events: Sequence[Event]) -> Counter:
    """Firings per hook of the model's own (a packed history unpacks only the chunks that
    hold one: records.firings_with_user_hook)."""
    return Counter(e.user_hook.hook.id for e in firings_with_user_hook(events))


def modules_with_user_hooks(hooks: Sequence[UserHookInfo]) -> set[str]:
    """Modules that carry a module hook or own a parameter with a hook (not tensor hooks
    registered in some forward, nor global hooks)."""
    return {h.module for h in hooks if h.module is not None and h.registered_at is None}


class UserHooksScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    UserHooksScreen { align: center middle; }
    UserHooksScreen > Vertical {
        width: 110; max-width: 100%; height: auto; max-height: 100%;
        border: round $primary; background: $surface; padding: 0 1;
    }
    UserHooksScreen DataTable { height: auto; max-height: 30; }
    """

    BINDINGS = [
        Binding("escape,q,H", "dismiss", "Close", id="hooktui.hooks.close"),
        Binding("b,f9", "toggle_break", "Break when it fires", id="hooktui.hooks.break"),
    ]

    def __init__(self, hooks: Sequence[UserHookInfo], events: Sequence[Event], breaks: set[int], toggle: Callable[[int], bool]) -> None:
        super().__init__()
        self._hooks = list(hooks)
        self._hits = hit_counts(events)
        self._breaks = set(breaks)
        self._toggle = toggle

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "your hooks (the model's own)"
            box.border_subtitle = "b: break when it fires · escape closes"
            if not self._hooks:
                yield Static("No hooks of the model's own: none registered before the run, none so far during it.")
            table: DataTable = DataTable(cursor_type="row", zebra_stripes=True)
            table.add_columns(*COLUMNS)
            for hook in self._hooks:
                table.add_row(*self._row(hook), key=str(hook.id))
            yield table

    def _row(self, hook: UserHookInfo) -> tuple:
        where = hook.where.rsplit("/", 1)[-1]
        flags = f" [{', '.join(hook.flags)}]" if hook.flags else ""
        # Text, never str: a DataTable reads a str cell as markup, and a name from a trace
        # file may be `[/]`.
        return (
            Text("●", "bold red") if hook.id in self._breaks else Text(""),
            Text(hook.function),
            Text(hook.kind + flags),
            Text(hook.owner),
            Text(where if hook.registered_at is None else f"{where} (registered {hook.registered_at})"),
            Text(str(self._hits.get(hook.id, 0))),
        )

    def action_toggle_break(self) -> None:
        table = self.query_one(DataTable)
        if not self._hooks:
            return
        hook = self._hooks[table.cursor_row]
        if self._toggle(hook.id):
            self._breaks.add(hook.id)
        else:
            self._breaks.discard(hook.id)
        table.update_cell(str(hook.id), table.ordered_columns[0].key, self._row(hook)[0])

    def action_dismiss(self) -> None:
        self.dismiss(None)
