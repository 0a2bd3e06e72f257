"""Plain records of the hooks the model, its user and its libraries registered themselves.

No torch, no Textual (like records.py): `hooktui view` reads them from a saved trace.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# What each kind of user hook is called with, for the Explain pane and the Hooks screen.
KIND_TEXT = {
    "forward_pre": "forward pre-hook (register_forward_pre_hook)",
    "forward": "forward hook (register_forward_hook)",
    "backward_pre": "full backward pre-hook (register_full_backward_pre_hook)",
    "full_backward": "full backward hook (register_full_backward_hook)",
    "legacy_backward": "legacy backward hook (register_backward_hook, deprecated)",
    "global_forward_pre": "global forward pre-hook (register_module_forward_pre_hook)",
    "global_forward": "global forward hook (register_module_forward_hook)",
    "global_backward_pre": "global full backward pre-hook (register_module_full_backward_pre_hook)",
    "global_full_backward": "global full backward hook (register_module_full_backward_hook)",
    "global_legacy_backward": "global backward hook (register_module_backward_hook, deprecated)",
    "tensor": "tensor hook (Tensor.register_hook)",
    "post_accumulate_grad": "post-accumulate-grad hook (Tensor.register_post_accumulate_grad_hook)",
    "multi_grad": "multi-grad hook (torch.autograd.graph.register_multi_grad_hook)",
}


@dataclass
class UserHookInfo:
    """One hook found on the model (at start) or registered while it ran."""

    id: int
    kind: str  # a key of KIND_TEXT
    owner: str  # "fc1", "fc1.weight", "global", "tensor (1, 5) made by AddmmBackward0"
    function: str  # the hook's qualified name
    filename: str | None = None
    lineno: int | None = None  # the hook's `def` line
    # The module that carries it, or whose forward registered it (None for global hooks).
    module: str | None = None
    flags: list[str] = field(default_factory=list)  # "with_kwargs", "always_call"; multi_grad: "mode=all" or "mode=any"
    # Where it was registered when that happened during the run ("file.py:12"); None: before.
    registered_at: str | None = None

    @property
    def where(self) -> str:
        return f"{self.filename}:{self.lineno}" if self.filename else "?"

    @property
    def label(self) -> str:
        return f"{self.function} ({self.kind} on {self.owner})"


@dataclass
class UserHookCall:
    """What one call of a user hook did: the `user_hook` firing's own facts."""

    hook: UserHookInfo
    # "None", "same" (returned what it got), "replaced", or "raised".
    returned: str = "None"
    # One sentence a changed slot, e.g. "grad_input[0] replaced: max |Δ| 0.9, norm 1.2 → 0.12".
    changes: list[str] = field(default_factory=list)
    error: str | None = None
