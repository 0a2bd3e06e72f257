"""Whether an autograd node was made during a module call: the question behind every
grad_input (the call's own consumers of an input) and grad_output (the uses after the call).

Mostly by sequence number: a node made during the call has a number between the two read at
its pre- and post-hook. Two exceptions:
- a node a create_graph backward built stands for the forward node whose backward built it
  (grad_origins.py);
- sequence numbers are counted per thread, so a call made on another thread than the run's
  knows its own nodes by a walk of its graph (thread_calls.py); nodes of such calls are placed
  against other calls by the order the calls began and ended (one clock for all threads), and
  their wrappers queue by the run thread's counter.
"""

from __future__ import annotations

import threading
from typing import Any

from . import thread_calls
from .grad_origins import GradOrigins


class Placement:
    def __init__(self) -> None:
        self.origins = GradOrigins()
        self.home = threading.get_ident()  # the thread the run started on
        # id(node) -> the innermost call made on another thread that made it.
        self.foreign: dict[int, Any] = {}
        self._home_seq = 0  # the run thread's counter at its latest module hook

    def queue_seq(self, call, seq: int) -> int:
        """Where the call's wrapper would sit in the engine's queue: a call on another
        thread counts as made when the run thread last made one, so that the calls that
        consume its outputs come after it."""
        if call.thread == self.home:
            self._home_seq = seq
            return seq
        return self._home_seq

    def call_ended(self, call) -> None:
        """`call` (its outputs need grad) has returned: a call made on another thread
        learns its own nodes now."""
        if call.thread != self.home:
            call.own = thread_calls.own_nodes(call.output_edges, call.input_edges, call.seq_start)
            for node_id in call.own:
                self.foreign.setdefault(node_id, call)  # children end first

    def inside(self, node, call) -> bool:
        """Whether `node` belongs to `call` (for a consumer of its inputs or outputs: when
        it does not, it was made after the call)."""
        if call.own is not None:
            return id(node) in call.own
        other = self.foreign.get(id(node))
        if other is not None:
            return call.in_key[1] < other.in_key[1] and other.out_key[1] < call.out_key[1]
        return call.seq_start <= self.origins.origin(node) < call.seq_end

    def clear(self) -> None:
        self.foreign.clear()
        self.origins.clear()
