"""Module calls made on another thread than the one the run started on.

placement.py tells a call's own autograd nodes from the others by sequence number: a node
made during the call has a number between the two read at its pre- and post-hook. That
counter is per thread, so it orders nothing across threads: a branch run in a
ThreadPoolExecutor numbers its nodes from its worker's counter, and they would look made
before (or inside) calls of the main thread. For a call on another thread, its own nodes
are therefore found by walking its graph at the post-hook, from its outputs down to its
inputs, and the nodes of the other threads are placed by the order in which the calls
began and ended (one clock for every thread).
"""

from __future__ import annotations

from typing import Any

from .nodes import seq_of

# A call's graph is walked this far at most (a call on a worker thread is usually one
# branch of a model, not a whole graph).
_MAX_NODES = 100_000


def own_nodes(output_edges: list[tuple[int, Any, int]], input_edges: dict[int, tuple[Any, int]], seq_start: int) -> set[int]:
    """ids of the nodes made during a call on this thread: reached from its outputs,
    stopping at its inputs' nodes and at nodes older than the call (parameters, tensors
    made before it)."""
    stop = {id(node) for node, _ in input_edges.values()}
    seen: set[int] = set()
    frontier = [node for _, node, _ in output_edges]
    while frontier and len(seen) < _MAX_NODES:
        node = frontier.pop()
        if node is None or id(node) in seen or id(node) in stop or seq_of(node) < seq_start:
            continue
        seen.add(id(node))
        frontier.extend(nxt for nxt, _ in node.next_functions if nxt is not None)
    return seen
