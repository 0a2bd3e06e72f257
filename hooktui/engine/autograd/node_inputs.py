"""What each gradient of an autograd node corresponds to.

A node's `grad_inputs[k]` is the gradient w.r.t. the tensor behind `next_functions[k]`.
Naming that tensor — a parameter, a transposed parameter, one of the module's inputs, the
output of an earlier op — is what makes a legacy backward hook's `grad_input` readable.
"""

from __future__ import annotations

import sys
from typing import Any

from .nodes import ACCUMULATE, name_of

# Ops that only rearrange a parameter before use: Linear's weight goes through TBackward0.
_REARRANGE = {"TBackward0": "transposed", "PermuteBackward0": "permuted", "TransposeBackward0": "transposed",
              "ViewBackward0": "viewed", "ReshapeAliasBackward0": "reshaped", "ExpandBackward0": "expanded",
              "UnsqueezeBackward0": "unsqueezed", "SqueezeBackward0": "squeezed"}


def label_next_functions(node, param_names: dict[int, str], input_edges: dict[tuple[int, int], str]) -> list[str]:
    """One label per `node.next_functions` entry.

    `param_names`: id(parameter) -> qualified name. `input_edges`: (id(node), output_nr)
    of the module's inputs -> their name ("args[0]").
    """
    # Interned: every firing of every call of a module carries these labels as its gradients'
    # targets; one string each instead of one per call (held records, benchmarks/memory.py).
    return [sys.intern(_label(nxt, nr, param_names, input_edges)) for nxt, nr in node.next_functions]


def _label(nxt: Any, nr: int, param_names: dict[int, str], input_edges: dict[tuple[int, int], str]) -> str:
    if nxt is None:
        return "nothing: that input of the op needs no gradient (None)"
    edge_name = input_edges.get((id(nxt), nr))
    if edge_name is not None:
        return f"the module's input {edge_name}"
    name = name_of(nxt)
    if name == ACCUMULATE:
        variable = getattr(nxt, "variable", None)
        return f"parameter {param_names[id(variable)]}" if id(variable) in param_names else "a leaf tensor"
    how = _REARRANGE.get(name)
    if how is not None and len(nxt.next_functions) >= 1:
        inner, inner_nr = nxt.next_functions[0]
        if inner is not None and name_of(inner) == ACCUMULATE and id(getattr(inner, "variable", None)) in param_names:
            return f"parameter {param_names[id(inner.variable)]}, {how} (through {name})"
        if inner is not None and (id(inner), inner_nr) in input_edges:
            return f"the module's input {input_edges[(id(inner), inner_nr)]}, {how} (through {name})"
    return f"the output of {name}, an earlier op"
