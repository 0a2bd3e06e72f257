"""The model's modules as a tree, with marks: ▶ current firing's module, ● breakpoint,
✓ already fired in the current phase (a breakpoint mark hides it), and a trailing `H`
on a module that carries hooks of the model's own (`H` lists them)."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from ...engine.records.records import ModuleInfo, TraceInfo

CURRENT, BREAK, VISITED, USER_HOOKS = "▶", "●", "✓", "H"
# Modules the tree holds: a trace file's header may list a million; building and relabelling
# (at every resize) that many nodes froze the app for tens of seconds. The rest are counted.
MODULES_SHOWN = 5_000


def fit_type(type_name: str, room: int) -> str:
    """`type_name` in `room` cells: whole, or cut at a CamelCase word boundary with an
    ellipsis (`NonDynamically…`), or nothing: never in the middle of a word (`Seque…`,
    `Multihe…` read as noise beside the name, which comes first)."""
    if len(type_name) <= room:
        return type_name
    cut = room - 1
    # A kept word shorter than 4 letters (`Non…`) says as little as a cut one.
    bounds = [i for i in range(4, cut + 1) if type_name[i].isupper() and not type_name[i - 1].isupper()]
    return type_name[: bounds[-1]] + "…" if bounds else ""


class ModuleTree(Tree[str]):
    """Node data is the module's qualified name ("" for the root)."""

    BINDINGS = [
        # Space steps, as everywhere else, instead of folding the node (enter folds).
        Binding("space", "app.step", "Next", show=False),
    ]

    def __init__(self, info: TraceInfo, **kwargs) -> None:
        root = info.modules[0] if info.modules and info.modules[0].name == "" else ModuleInfo("", info.model)
        super().__init__("", data="", **kwargs)
        self.show_root = True
        self.guide_depth = 2
        self._info = {m.name: m for m in info.modules}
        self._info.setdefault("", root)
        self._module_nodes: dict[str, TreeNode[str]] = {"": self.root}
        self._marks: dict[str, tuple[bool, bool, bool]] = {}
        self._hooked: set[str] = set()
        shown = 0
        for module in info.modules:
            if module.name == "":
                continue
            if shown == MODULES_SHOWN:
                more = len(info.modules) - MODULES_SHOWN - (1 if root is info.modules[0] else 0)
                self.root.add_leaf(Text(f"… {more:,} more modules (the tree shows the first {MODULES_SHOWN:,})", "dim"), data=None)
                break
            shown += 1
            parent = self._module_nodes.get(module.parent or "", self.root)
            node = parent.add("", data=module.name, expand=True)
            self._module_nodes[module.name] = node
        for name, node in self._module_nodes.items():
            node.allow_expand = bool(node.children)
            node.set_label(self._label(name))
        self.root.expand()

    def node_for(self, module: str) -> TreeNode[str] | None:
        return self._module_nodes.get(module)

    @property
    def selected_module(self) -> str | None:
        node = self.cursor_node
        return None if node is None else node.data

    def mark_user_hooks(self, modules: set[str]) -> None:
        """Mark the modules that carry the model's own hooks."""
        self._hooked = set(modules)
        self._relabel()

    def on_resize(self) -> None:
        self._relabel()
        # A shorter tree (the panes below took more rows) must still show the current module.
        if self.cursor_line >= 0:
            self.call_after_refresh(self.scroll_to_line, self.cursor_line, animate=False)

    def _relabel(self) -> None:
        for name, node in self._module_nodes.items():
            node.set_label(self._label(name, *self._marks.get(name, (False, False, False))))

    def update_marks(self, current: str | None, breakpoints: set[str], visited, changed=None) -> None:
        """Refresh the marks; `visited(name)` says if a module fired in this phase so far.
        `changed`: the only modules whose marks may have changed (None: every module; a
        step on a big model changes a few marks, and walking them all took ~20 ms)."""
        nodes = self._module_nodes
        for name in nodes if changed is None else changed:
            node = nodes.get(name)
            if node is None:
                continue
            marks = (name == current, name in breakpoints, bool(visited(name)))
            if self._marks.get(name) == marks:
                continue
            self._marks[name] = marks
            node.set_label(self._label(name, *marks))

    def _label(self, name: str, current: bool = False, breakpoint: bool = False, visited: bool = False) -> Text:
        module = self._info.get(name) or ModuleInfo(name, "?")
        text = Text(no_wrap=True)
        text.append(CURRENT if current else " ", "bold")
        if breakpoint:
            text.append(BREAK, "bold red")
        else:
            text.append(VISITED if visited else " ", "green")
        text.append(" ")
        text.append(name.rpartition(".")[2] if name else "(root)", "bold" if current else "")
        text.append(" ")
        node = self._module_nodes.get(name)
        hooked = name in self._hooked
        # Cells left for the type: the tree's guides take 2 a level, an unfold mark 2, the
        # scrollbar 1, the user-hook mark 2. Before the first layout (width 0) the whole type.
        depth = 0 if not name else name.count(".") + 1
        indent = 2 * depth + (2 if node is not None and node.children else 0) + 1 + (2 if hooked else 0)
        room = self.size.width - indent - text.cell_len if self.size.width else len(module.type)
        text.append(fit_type(module.type, room), "bold" if not name else "dim")
        if hooked:
            text.append(" " + USER_HOOKS, "bold magenta")
        return text

    def show_module(self, module: str) -> None:
        """Move the cursor to `module` and scroll it into view."""
        node = self._module_nodes.get(module)
        if node is None:
            return
        parent = node.parent
        while parent is not None:
            if not parent.is_expanded:
                parent.expand()
            parent = parent.parent
        self.move_cursor(node, animate=False)
