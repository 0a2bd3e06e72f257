"""The autograd node of the current firing: name, sequence number, saved tensors, and
its next_functions as a tree a few levels deep."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static, Tree
from textual.widgets.tree import TreeNode

from ...engine.records.records import Event, NodeRecord
from .text_update import set_text

# seq_nr of nodes that have none (AccumulateGrad): UINT64_MAX.
_NO_SEQ = 2**63


def seq_text(seq_nr: int | None) -> str:
    return "-" if seq_nr is None or seq_nr >= _NO_SEQ else str(seq_nr)


# A trace file may give one node 10,000 inputs and as many saved tensors, 32 levels deep:
# the pane draws a bounded part and counts the rest ("… N more").
SAVED_SHOWN = 20
CHILDREN_SHOWN = 50  # next_functions of one node
TREE_MAX = 400  # nodes in the whole tree


def saved_text(saved: dict) -> str:
    parts = []
    for name, value in list(saved.items())[:SAVED_SHOWN]:
        shape = "(" + ", ".join(str(n) for n in value) + ("," if len(value) == 1 else "") + ")" if isinstance(value, list) else str(value)
        parts.append(f"{name} {shape}")
    if len(saved) > SAVED_SHOWN:
        parts.append(f"… {len(saved) - SAVED_SHOWN} more")
    return ", ".join(parts)


def node_label(node: NodeRecord | None) -> Text:
    if node is None:
        return Text("None (no gradient flows this way)", style="dim")
    text = Text(node.name.removeprefix("torch::autograd::"), style="bold")
    seq = seq_text(node.seq_nr)
    if seq != "-":
        text.append(f" seq {seq}", "dim")
    if node.saved:
        text.append("  saved: " + saved_text(node.saved), "italic")
    return text


_ROLES = {
    "backward_pre": "node about to run: its grad_outputs are this module's grad_output",
    "backward": "node being executed for this module's grad_input",
    "param_grad": "node that accumulates this parameter's .grad",
    "legacy_backward": "node the legacy register_backward_hook is attached to (the module's last op)",
    "node_pre": "autograd node of this call, about to run (step into)",
    "node": "autograd node of this call, has just run (step into)",
}


# Why a firing has no autograd node, by hook kind.
_NO_NODE = {
    None: "this firing has no node (forward_pre runs before the module; outputs that need no grad have none)",
    "error": "the run failed here",
    "final_grad": ".grad read once the backward had returned: no node runs then",
}


def role(event: Event) -> str:
    if event.phase == "forward":
        return "grad_fn of this call's output (created by the forward)"
    return _ROLES.get(event.hook, f"autograd node of this {event.hook} firing")


class AutogradPane(Vertical):
    ALLOW_MAXIMIZE = True  # `z` zooms the whole pane, not the table inside it
    DEFAULT_CSS = """
    AutogradPane { height: 1fr; }
    AutogradPane > #autograd-head { height: auto; padding: 0 1; }
    AutogradPane > Tree { height: 1fr; }
    """

    def __init__(self, event: Event | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self._composed = False  # children exist (is_mounted is set only after on_mount)
        self._event = event
        self._stale = False

    def compose(self) -> ComposeResult:
        yield Static(id="autograd-head")
        tree: Tree[None] = Tree("next_functions", id="autograd-tree")
        tree.guide_depth = 2
        yield tree

    def on_mount(self) -> None:
        self._composed = True
        self.show(self._event)

    def show(self, event: Event | None) -> None:
        self._event = event
        if not self._composed:
            return  # on_mount shows it
        self._draw(event)

    def hold(self, event: Event | None) -> None:
        """Take `event` without drawing it: the pane is behind another tab, where rebuilding
        the tree would lay the screen out again at every step for nothing. `up_to_date`
        draws it when shown or read."""
        self._event = event
        self._stale = True

    def up_to_date(self) -> AutogradPane:
        """This pane, its head and tree drawn for the firing it was last given."""
        if self._stale and self._composed:
            self._draw(self._event)
        return self

    def on_show(self) -> None:
        self.up_to_date()

    def _draw(self, event: Event | None) -> None:
        self._stale = False
        head = self.query_one("#autograd-head", Static)
        tree = self.query_one(Tree)
        tree.clear()
        if event is None:
            set_text(head, "")
            tree.display = False
            return
        set_text(head, self._head(event))
        node = event.node
        tree.display = node is not None
        tree.root.set_label(Text("next_functions (inputs of the node)", style="bold"))
        if node is not None:
            self._budget = TREE_MAX
            self._add(tree.root, node.next, node.truncated)
        tree.root.expand_all()

    def _head(self, event: Event) -> Text:
        text = Text()
        node = event.node
        if node is None:
            text.append(event.grad_fn or "no autograd node", "bold")
            text.append("\n" + _NO_NODE.get(event.hook, _NO_NODE[None]), "dim")
        else:
            text.append(node.name.removeprefix("torch::autograd::"), "bold")
            text.append(f"  seq_nr {seq_text(node.seq_nr)}", "")
            text.append(f"\n{role(event)}", "dim")
            if node.saved:
                text.append("\nsaved: ", "bold")
                text.append(saved_text(node.saved))
        if event.forward_index is not None:
            text.append(f"\nbelongs to forward firing #{event.forward_index}", "bold cyan")
        return text

    def _add(self, parent: TreeNode, children: list[NodeRecord | None], truncated: bool) -> None:
        for shown, child in enumerate(children):
            if shown >= CHILDREN_SHOWN or self._budget <= 0:
                parent.add_leaf(Text(f"… {len(children) - shown} more", style="dim"))
                return
            self._budget -= 1
            if child is not None and (child.next or child.truncated):
                branch = parent.add(node_label(child))
                self._add(branch, child.next, child.truncated)
            else:
                parent.add_leaf(node_label(child))
        if truncated:
            parent.add_leaf(Text("…", style="dim"))
