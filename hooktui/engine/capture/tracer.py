"""Hooks on every module: forward pre/post firings, and full-backward-hook firings
captured without PyTorch's `register_full_backward_hook`.

Why not the real full backward hooks: they route a module's inputs and outputs through
`BackwardHookFunction`, whose outputs are views that raise on any in-place op
(`nn.ReLU(inplace=True)`, `x += y`), so they break real models. Here what the model sees
is left alone (but see call_outputs.py for the few outputs that get a view of their own);
per module call we hook existing autograd nodes instead, and the numbers are PyTorch's:

- grad_output (call_outputs.py gives the slots): when a backward starts (`backward_pass`,
  for every backward the model runs: backward_calls.py), the graph is walked from its
  roots. An output's gradient is taken at the pre-hook of the node that produced it (what
  arrives there is the sum over every use outside the call, after the tensor hooks a
  caller put on it, exactly what PyTorch's wrapper hands backward_pre), unless something
  inside the call also consumes it: then it is the sum of the post-hooks of the nodes
  created after the call that consume it. The elements of a tuple made by different nodes
  are taken that way too, all but the newest (tuple_wrapper.py): PyTorch's one wrapper for
  the tuple runs once every element's uses have, not when the oldest element's node does.
  A backward that reaches one element only still fires the calls that made the others
  (`_nones_upstream`), as that wrapper passes None on for them.
- grad_input: the nodes created during the call (their sequence numbers fall between the
  pre- and post-hook) that consume a positional input's gradient edge (taken before the
  call), anywhere in the graph (also an aux loss that leaves the call by an attribute).
  A post-hook on each gives this call's share of that input's gradient; an in-place op on
  the input inside the module is just another consumer node. A tensor passed again as a
  keyword argument is given a view first, so its share stays out (PyTorch's hook never
  sees kwargs).

When: PyTorch's hooks run inside the wrapper nodes, whose place in the autograd engine's
queue is their sequence number: the output wrapper is created as the call ends, the input
wrapper as it starts. A firing whose gradients are complete waits ("armed") until a node
created before its wrapper would is about to run (a pre-hook on every node of the graph),
or that backward ends; the armed firings then go in the order the engine would run the
wrappers (newest first).

Like PyTorch's full hooks: a call whose positional inputs need no grad fires its backward
firing early, right after backward_pre, with no input grads; a call whose outputs need no
grad fires no backward at all; a tensor input that does not require grad beside one that
does gets zeros, and so does the call that made an input used only without a gradient
(`_zeros_upstream`). Unlike them, dict/list/dataclass outputs are captured too (as extras).

Whether a node was made during the call is placement.py's question: sequence numbers,
except for nodes a create_graph backward built and for calls made on other threads.
"""

from __future__ import annotations

import heapq
import itertools
import sys
import threading
from collections import defaultdict
from collections.abc import Callable, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch
from torch import nn
from torch.autograd.graph import get_gradient_edge

from ..autograd import nodes
from ..autograd.node_hooks import GradWatch, NodeHooks
from ..autograd.placement import Placement
from ..records import firing
from ..records.notes import Note
from ..records.records import NO_NOTES, SUMMARY_FAILED, Event, SourceLocation, TensorRecord
from ..records.user_hook_records import UserHookCall
from ..summaries import layouts, sharded, stats
from . import backward_calls, collector, hunt, scripted, tuple_wrapper
from .call_outputs import OutputSlot, output_slots
from .contain import Containment, failure_text
from .final_grads import fire_final_grads
from .legacy import LegacyHooks
from .model_walk import ModelWalk, walk_of
from .module_hooks import ForwardHooks
from .naming import call_tensors, indexed, named_tensors
from .node_steps import NodeSteps
from .param_grads import ParamGradHooks
from .pipeline_grads import Pipeline
from .shared_values import NOTHING, Kept
from .source import caller_location, definition_location


@dataclass(slots=True)
class LiveFiring:
    """The live objects of the firing the worker is paused in."""

    event: Event
    module: nn.Module | None
    tensors: dict[str, torch.Tensor | None]
    node: Any = None  # torch.autograd.graph.Node
    call: Any = None  # the engine's record of the module call (opaque to callers)
    # What the hook received, by the names a condition sees: args, kwargs, output,
    # grad_output, grad_input (engine/analysis/breakpoints.py).
    scope: dict[str, Any] | None = None


class InputMeta(NamedTuple):
    """What the engine keeps of a positional tensor input (not the tensor itself)."""

    shape: tuple[int, ...]
    dtype: torch.dtype
    device: torch.device
    requires_grad: bool


# A call's inputs' metadata, one copy of each equal tuple (shared_values.py).
_shared_inputs = Kept()


@dataclass(slots=True)
class _Call:
    """One call of one module, from its forward pre-hook to its last backward firing.

    Held from the forward to the backward by every call whose outputs need grad: what sets
    the run's peak of live objects on a model of many small modules. So it holds no empty
    container of its own (`NOTHING` and `()` are shared; a writer builds its own dict) and
    shares its equal immutable values with other calls (shared_values.py)."""

    module: nn.Module
    name: str
    type: str
    index: int
    source: SourceLocation | None
    n_args: int
    # By arg index: a positional tensor argument's metadata, None for any other argument.
    inputs: tuple[InputMeta | None, ...] = ()
    # Inputs that require grad: arg index -> their gradient edge (node, output_nr) before the call.
    input_edges: Mapping[int, tuple[Any, int]] = NOTHING
    # The same tensor passed again: arg index -> index of its first occurrence.
    duplicates: Mapping[int, int] = NOTHING
    # Tensor hooks on an input needing grad when the call starts (arg index -> count; only
    # inputs that had some), and the inputs the module put a hook on inside forward
    # (`x.register_hook(...)`).
    input_hook_counts: Mapping[int, int] = NOTHING
    hooked_inputs: tuple[int, ...] = ()
    # Tensors needing grad nested in a positional argument ("args[0][0]"), when no
    # top-level one does.
    nested_inputs: tuple[str, ...] = ()
    seq_start: int = 0
    seq_end: int = 0
    slots: tuple[OutputSlot, ...] = ()
    # Whether PyTorch's own full hooks would fire for this call (a tensor or tuple output).
    pytorch_fires: bool = True
    forward_index: int | None = None
    output_node: Any = None
    # Where PyTorch's input / output wrapper node would sit in the engine's queue:
    # (sequence number when it would be created, creation order).
    in_key: tuple[int, int] = (0, 0)
    out_key: tuple[int, int] = (0, 0)
    thread: int = 0
    # ids of its own nodes, for a call made on another thread than the run's (thread_calls.py).
    own: set[int] | None = None

    @property
    def output_edges(self) -> list[tuple[int, Any, int]]:
        return [(k, s.edge[0], s.edge[1]) for k, s in enumerate(self.slots) if s.edge is not None]


@dataclass(slots=True)
class _Pass:
    """One call's backward firings in one backward pass.

    One for every call the backward reaches, all made as it starts (the run's peak of
    live objects): the rare entries below are the shared `()` / `NOTHING` until one is
    added (`note_merged`, `set_after_hooks`, ...), which builds the pass's own."""

    call: _Call
    note: str | None
    grad_outputs: list | None = None
    pending_inputs: tuple | None = None
    inputs_watched: bool = False
    # Slots of an input returned unchanged that several later nodes consume.
    merged_uses: tuple[str, ...] = ()
    # Slot -> its gradient after the tensor hooks the module put on that output.
    after_hooks: dict[int, Any] = NOTHING
    # Inputs the module hooked inside forward whose grad_input is before those hooks.
    before_input_hooks: tuple[int, ...] = ()
    # Reached only by the zeros an input wrapper passes on (_zeros_upstream): its nodes never run.
    zeros: bool = False
    # Slots whose uses inside the call were told from those after it by sequence number
    # alone, in a run where modules were also called on worker threads.
    by_number: tuple[str, ...] = ()

    def set_after_hooks(self, slot: int, grad) -> None:
        if self.after_hooks is NOTHING:
            self.after_hooks = {}
        self.after_hooks[slot] = grad


@dataclass(slots=True)
class _Backward:
    """One running backward (the main one, or one nested in it or in forward)."""

    kind: str
    # Armed firings: (-seq, -tick, n, fire), so the newest wrapper pops first.
    armed: list = field(default_factory=list)
    # ids of the nodes of its graph, and the calls none of whose outputs is in it.
    seen: set[int] = field(default_factory=set)
    unreached: list[_Call] = field(default_factory=list)
    note: str | None = None
    # Its gradient watches: closed when it ends (a node it watched that did not run here
    # may run in a later backward over a retained graph, which has watches of its own).
    watches: list[GradWatch] = field(default_factory=list)
    # Nodes the None an output wrapper passes on has reached (`_nones_upstream`).
    nulled: set[int] = field(default_factory=set)
    # (id(node), output_nr) of each root -> the gradient it starts from.
    seeds: dict[tuple[int, int], Any] = field(default_factory=dict)


Emit = Callable[[Event, LiveFiring], None]
# Told when a backward the tracer noticed starts and when it has ended (its last firing
# made), with how many such backwards were under way around it (0: the outermost).
OnBackward = Callable[[int], None]


class Tracer:
    """Installs the hooks on every module of `model`, turns firings into Events, removes
    every hook it added on `remove()`."""

    def __init__(
        self,
        model: nn.Module,
        emit: Emit,
        options: stats.StatsOptions | None = None,
        *,
        legacy: bool = False,
        param_grads: bool = True,
        walk: ModelWalk | None = None,
        on_backward_start: OnBackward | None = None,
        on_backward_end: OnBackward | None = None,
    ) -> None:
        """`on_backward_start(depth)`: a backward starts, before anything of it is set up (a
        listener may set `phase` here); `on_backward_end(depth)`: it has ended, its last
        firing made. `depth`: backwards under way around it (0 for the outermost). What
        they raise reaches the caller of backward, as what `emit` raises does."""
        self.model = model
        self.emit = emit
        self.on_backward_start = on_backward_start
        self.on_backward_end = on_backward_end
        self._backward_depth = 0
        self.options = stats.StatsOptions() if options is None else options  # made now: HOOKTUI_DEVICE_PATH
        self.phase = "forward"
        # hooktui's own failures stay inside its hooks (contain.py).
        self.contain = Containment()
        walk = self._walk = walk or walk_of(model)
        self._modules = dict(walk.modules)
        # id(module) -> (name, type name): what every firing of the module repeats.
        self._module_facts = walk.facts
        self.param_names = walk.param_names
        # Lazy parameters appear during the first forward: walked again when backward starts.
        self._lazy = walk.has_lazy
        # Legacy firings are always counted (their numbers are taken), recorded with `legacy`.
        self._legacy = LegacyHooks(self, record=legacy)
        self._param_grads = ParamGradHooks(self) if param_grads else None
        self._node_steps = NodeSteps(self)
        # Set while a non-finite breakpoint is on (hunt.py): watch every node in backward,
        # say where a non-finite forward value was created.
        self.hunting = False
        # With `hunting`: read no value while the step runs (hooktui.guard on a device):
        # what needs the non-finite counts is kept and decided at the step's end (hunt.py).
        self.defer_hunt = False
        # The step runs a pipeline schedule (engine/run/pipeline.py): set before install.
        self.pipeline: Pipeline | None = None
        self.starting_kind = "backward"  # the kind of the backward starting (backward_pass)
        self.backward_roots: list = []  # the tensors of the backward starting (backward_pass)
        # Firing index -> (name, grad_fn) of its tensors, for the creation notes decided later.
        self.note_sources: dict[int, list] = {}
        self._node_watch = hunt.NodeWatch(self)
        self._forward_hooks = ForwardHooks()
        self._exit = ExitStack()
        self._node_hooks = NodeHooks(self.contain)
        # (thread, id(module)) -> its calls under way: a module's pre- and post-hooks run on
        # the thread that calls it, and modules may run on several threads at once.
        # (An entry only while a call of the module is under way.)
        self._stacks: dict[tuple[int, int], list[_Call]] = {}
        # (thread, id(module)) of the calls whose forward returned, until the hook that
        # also runs when forward raises (`_raised_hook`) has seen them.
        self._returned: set[tuple[int, int]] = set()
        # Calls whose outputs need grad: their backward firings are watched in every
        # backward that reaches them.
        self._calls: list[_Call] = []
        # The same calls by module name (a param_grad firing asks for its module's).
        self._calls_of: dict[str, list[_Call]] = defaultdict(list)
        self._backwards: list[_Backward] = []
        # Which call each node belongs to (threads, create_graph backwards: placement.py).
        self._placement = Placement()
        self._tick = itertools.count()
        # Firings from several threads get distinct indexes, emitted in index order.
        self._firing = threading.RLock()
        self._counts: dict[str, int] = defaultdict(int)
        # Of those, the calls made inside a backward: activation checkpointing's recomputes
        # (a module run again to rebuild what it saved, not a new use of it).
        # The exception a forward call raised, and that call's (module, type, call, source):
        # the innermost one to raise it (`call_that_raised`).
        self._raised: tuple[BaseException, tuple[str, str, int, SourceLocation | None]] | None = None
        # Module name -> index of its latest forward firing (param_grad firings link to it).
        self._last_forward: dict[str, int] = {}
        # Module name -> notes on the TorchScript children it holds (scripted.py).
        self._scripted_notes: dict[str, list[str]] = {}
        # Every firing's number (firing.py: plain, or N.k for node firings).
        self._numbers = firing.Counter()
        # What every call's gradient watches call back (node_hooks.GradWatch): one bound
        # method each for the whole run, not a closure a watch.
        self._outputs_arrived = self._grad_outputs_arrived
        self._inputs_arrived = self._on_grad_input

    # -- install / remove --------------------------------------------------------
    def install(self) -> None:
        # Under torch.compile, dynamo would trace into the hooks (graph breaks on frame
        # inspection, recompile limits); disabled, they run eagerly between compiled graphs.
        # torch.compiler.disable imports dynamo (2-5 s): only when something compiled
        # has imported it already (torch.compile does, as the model is built).
        compiled = "torch._dynamo" in sys.modules
        hooks = [self._module_hook(h, f"its {kind} hook")
                 for h, kind in ((self._pre_hook, "forward pre"), (self._post_hook, "forward"), (self._raised_hook, "forward"))]
        if compiled:
            hooks = [torch.compiler.disable(h) for h in hooks]
        pre_hook, post_hook, raised_hook = hooks
        self._root_pre = pre_hook
        self._scripted_notes = self._walk.derived("scripted_notes", lambda w: scripted.notes_by_parent(w.modules))
        for _, module in self._walk.modules:
            if scripted.is_scripted(module):
                continue  # PyTorch refuses hooks there (scripted.py)
            # PyTorch tells an always_call hook nothing about whether forward raised (and
            # sys.exc_info() is also set for a call made inside an `except` block), so the
            # ordinary hook marks the calls that returned; the always_call one, which runs
            # right after it, or alone when forward raised, takes the others.
            self._forward_hooks.add(module, pre_hook, post_hook, raised_hook)
        if self._param_grads is not None:
            self._param_grads.install(self.model, self._walk.params)
        self._exit.enter_context(backward_calls.noticed_by(self))
        self._placement.home = threading.get_ident()

    def fire_root_pre(self, args: tuple, kwargs: dict):
        """The root's forward pre firing, for a tracer installed inside the root's own call
        (hooktui.arm, engine/run/armed_step.py): PyTorch took the call's pre-hooks before
        the tracer's existed. Returns what the pre-hook returns (new args and kwargs, or None)."""
        return self._root_pre(self.model, args, kwargs)

    def _module_hook(self, hook: Callable, where: str) -> Callable:
        """`hook` contained (contain.py: hooktui's own exceptions never reach torch), and,
        while hunting, unwatched: the creation-line mode (hunt.py) watches the model's ops,
        not the dozens hooktui runs per firing, so torch function handling is off inside
        its hooks. One wrapper for both: it runs three times per module call."""
        contain = self.contain

        def run(*args):
            try:
                if not self.hunting:
                    return hook(*args)
                with torch._C.DisableTorchFunction():
                    return hook(*args)
            except Exception as exc:
                if contain.passes(exc):
                    raise
                contain.failed(where, exc)
                return None

        return run

    def remove(self) -> None:
        self._exit.close()
        self._forward_hooks.remove()
        if self._param_grads is not None:
            self._param_grads.remove()
        self._node_hooks.remove()
        self._stacks.clear()
        self._calls.clear()
        self._calls_of.clear()
        self._placement.clear()
        self._backwards.clear()
        # The tracer's helpers point back at it (a cycle only the collector frees): drop
        # the session (and its trace) from it, so they are freed as soon as they are dropped.
        self.emit = _after_the_run

    @property
    def walk(self) -> ModelWalk:
        return self._walk

    @property
    def backward_depth(self) -> int:
        """How many backwards (that the tracer noticed) are under way; 0 outside backward."""
        return self._backward_depth

    @property
    def next_free_index(self) -> int:
        """The index the next plain firing will take."""
        return self._numbers.taken

    @property
    def calls(self) -> list:
        """Module calls whose outputs need grad (hunt.py finds a node's innermost one)."""
        return self._calls

    @property
    def node_watch(self) -> hunt.NodeWatch:
        return self._node_watch

    def next_index(self, hook: str = "error") -> int:
        """A number of the plain sequence, for a firing made outside fire_event (the run's
        error), or taken by a firing counted but not recorded (a legacy firing of a run
        that does not record them: firing.py)."""
        with self._firing:
            index, _ = self._numbers.take(hook)
            return index

    # -- forward -----------------------------------------------------------------
    def _pre_hook(self, module: nn.Module, args: tuple, kwargs: dict):
        name, type_name = self._module_facts[id(module)]
        thread = threading.get_ident()
        if thread == self._placement.home:
            thread = self._placement.home  # one int object, not one a call
        call = _Call(
            module=module,
            name=name,
            type=type_name,
            index=self._counts[name],
            source=caller_location() or definition_location(type(module)),
            n_args=len(args),
            inputs=_shared_inputs(tuple(
                InputMeta(layouts.shape_of(a) if a.is_nested else a.shape, a.dtype, a.device, a.requires_grad)
                if isinstance(a, torch.Tensor) else None for a in args)),
            thread=thread,
        )
        self._counts[name] += 1
        key = (thread, id(module))
        stack = self._stacks.get(key)
        if stack is None:
            self._stacks[key] = [call]
        else:
            stack.append(call)

        tensors = call_tensors(args, kwargs)
        records = self._describe_all(tensors)
        notes = self._hunt_notes(tensors, records) if self.hunting else None
        self.fire_call(call, "forward_pre", records, dict(tensors), node=None, notes=notes, scope={"args": args, "kwargs": kwargs})

        if not torch.is_grad_enabled():
            return None
        edges = None  # the call's own dict, once an input needs grad
        for i, arg in enumerate(args):
            if isinstance(arg, torch.Tensor) and arg.requires_grad:
                edge = _edge(arg)
                first = None
                for j, e in call.input_edges.items():
                    if e[0] is edge[0] and e[1] == edge[1]:
                        first = j
                        break
                if first is not None:
                    # Node hooks cannot tell the uses of one tensor apart: its whole
                    # gradient through this call goes to the first occurrence.
                    if call.duplicates is NOTHING:
                        call.duplicates = {}
                    call.duplicates[i] = first
                    continue
                if edges is None:
                    edges = call.input_edges = {}
                edges[i] = edge
                hooks = _hook_count(arg)
                if hooks:
                    if call.input_hook_counts is NOTHING:
                        call.input_hook_counts = {}
                    call.input_hook_counts[i] = hooks
        if not call.input_edges:
            # Tensors needing grad inside an argument (a PackedSequence, a tuple): PyTorch's
            # hook sees only top-level tensors, so for it no input requires grad.
            call.nested_inputs = tuple(n for n, t in tensors if t.requires_grad and n.startswith("args[") and n.count("[") > 1)
        new_kwargs = _kwargs_apart_from_args(kwargs, call.input_edges) if kwargs else None
        # After the views above: they are not the call's own nodes.
        call.seq_start = torch._C._autograd._get_sequence_nr()
        call.in_key = (self._placement.queue_seq(call, call.seq_start), next(self._tick))
        return None if new_kwargs is None else (args, new_kwargs)

    def _raised_hook(self, module: nn.Module, args: tuple, kwargs: dict, output: Any) -> None:
        key = (threading.get_ident(), id(module))
        if key in self._returned:
            self._returned.discard(key)  # forward returned: `_post_hook` has taken the call
            return
        stack = self._stacks.get(key)
        if not stack:
            return
        call = stack.pop()
        if not stack:
            del self._stacks[key]  # a module's list only while a call of it is under way
        # The exception reaches the innermost call first: the call it was raised in (a
        # model may catch it and go on, so it is kept with the exception it belongs to).
        exc = sys.exc_info()[1]
        if exc is not None and (self._raised is None or self._raised[0] is not exc):
            self._raised = (exc, (call.name, call.type, call.index, call.source))

    def call_that_raised(self, exc: BaseException) -> tuple[str, str, int, SourceLocation | None] | None:
        """(module, type, call, source) of the forward call `exc` was raised in, if any."""
        return self._raised[1] if self._raised is not None and self._raised[0] is exc else None

    def _post_hook(self, module: nn.Module, args: tuple, kwargs: dict, output: Any):
        key = (threading.get_ident(), id(module))
        self._returned.add(key)
        stack = self._stacks.get(key)
        if not stack:
            return None
        call = stack.pop()
        if not stack:
            del self._stacks[key]  # a module's list only while a call of it is under way
        if call.input_edges:
            counts = call.input_hook_counts
            call.hooked_inputs = tuple(i for i in call.input_edges if _hook_count(args[i]) > counts.get(i, 0))

        if isinstance(output, torch.Tensor):
            outputs = [("output", output)]
            first_node = output.grad_fn
        else:
            outputs = list(named_tensors(output, "output"))
            first_node = next((node for node in (t.grad_fn for _, t in outputs) if node is not None), None)
        call.output_node = first_node
        tensors = call_tensors(args, kwargs) + outputs
        records = self._describe_all(tensors)
        notes = self._hunt_notes(tensors, records) if self.hunting else None
        if call.name in self._scripted_notes:
            notes = (notes or []) + self._scripted_notes[call.name]
        call.forward_index = self.fire_call(call, "forward", records, dict(tensors), node=first_node, notes=notes,
                                            scope={"args": args, "kwargs": kwargs, "output": output})
        self._last_forward[call.name] = call.forward_index
        if not torch.is_grad_enabled():
            return None
        returned, slots, call.pytorch_fires = output_slots(output, call.seq_start, call.input_edges)
        if any(slot.edge is not None for slot in slots):
            call.slots = slots
            call.seq_end = torch._C._autograd._get_sequence_nr()
            call.out_key = (self._placement.queue_seq(call, call.seq_end), next(self._tick))
            self._calls.append(call)
            self._calls_of[call.name].append(call)
            self._placement.call_ended(call)
            self._legacy.watch(call, outputs)
        return None if returned is output else returned

    # -- backward: where the watches go --------------------------------------------
    @contextmanager
    def backward_pass(self, roots: list[torch.Tensor], kind: str, create_graph: bool = False, keep_graph: bool | None = None,
                      *, inputs: list[torch.Tensor] = (), seeds: list[tuple[torch.Tensor, torch.Tensor | None]] = ()):
        """Around one torch.autograd.backward / grad call (backward_calls.py). `keep_graph`:
        retain_graph (None: as PyTorch, create_graph); `inputs`: the tensors it was asked
        for (`inputs=`), if any; `seeds`: (root, its gradient as given, None for the
        implicit one). The listeners (`on_backward_start`, `on_backward_end`) are told
        first and last."""
        depth = self._backward_depth
        self.backward_roots = roots  # for the listener: what this backward starts from (the loss)
        self.starting_kind = kind  # for the listener: "backward" (accumulates into .grad) or "grad"
        if self.on_backward_start is not None:
            self.on_backward_start(depth)
        self._backward_depth += 1
        try:
            with self._one_backward(roots, kind, create_graph, keep_graph, inputs, seeds):
                yield
        finally:
            self._backward_depth -= 1
            if self.on_backward_end is not None:
                self.on_backward_end(depth)
            if self.backward_roots is roots:
                # Held on, the loss would keep the whole graph alive (its nodes, hooktui's
                # hooks on them, with retain_graph the saved activations) as long as a
                # session that stays does: the app's, `debug`'s.
                self.backward_roots = []

    @contextmanager
    def _one_backward(self, roots: list[torch.Tensor], kind: str, create_graph: bool, keep_graph: bool | None,
                      inputs: list[torch.Tensor] = (), seeds: list = ()):
        note = None
        if self.phase == "forward":
            note = f"fired inside torch.autograd.{kind}() called during the forward pass (PyTorch's hooks fire there too)"
        elif self._backwards:
            note = f"fired in a backward nested in the main one (torch.autograd.{kind}(), e.g. reentrant activation checkpointing)"
        contain = self.contain
        if self._param_grads is not None:
            # Lazy modules' parameters exist by now.
            contain.call("placing its parameter-gradient hooks", self._param_grads.install, self.model,
                         None if self._lazy else self._walk.params)
            if self.hunting:
                contain.call("reading the .grad held before this backward", self._param_grads.note_bad_grads, self.model)
        current = _Backward(kind)
        self._backwards.append(current)
        nodes.backward_started()
        try:
            with collector.paused_then_frozen():
                contain.call("placing its gradient watches for this backward", self._place_watches, roots, note,
                             create_graph if keep_graph is None else keep_graph, create_graph,
                             inputs if kind == "backward" else (), seeds)
            yield
            contain.call("its firings at the end of this backward", self._release, None)
        finally:
            for watch in current.watches:
                watch.close()
            nodes.backward_ended()
            self._backwards.remove(current)

    def _place_watches(self, roots: list[torch.Tensor], note: str | None, keep_graph: bool, create_graph: bool = False,
                       inputs: list[torch.Tensor] = (), seeds: list = ()) -> None:
        edges = [get_gradient_edge(t) for t in roots if t.requires_grad]
        consumers: dict[tuple[int, int], list[tuple[Any, int]]] = defaultdict(list)
        graph = []
        seen: set[int] = set()
        for edge in edges:
            if id(edge.node) not in seen:
                seen.add(id(edge.node))
                graph.append(edge.node)
        frontier = list(graph)
        while frontier:
            node = frontier.pop()
            for position, (nxt, nr) in enumerate(node.next_functions):
                if nxt is None:
                    continue
                consumers[(id(nxt), nr)].append((node, position))
                if id(nxt) not in seen:
                    seen.add(id(nxt))
                    frontier.append(nxt)
                    graph.append(nxt)
        current = self._backwards[-1]
        current.seen, current.note = seen, note
        inner = tuple_wrapper.inner_returns_of_inputs(self._calls, inputs, seen) if inputs else {}
        current.seeds = tuple_wrapper.seed_grads(seeds)
        for call in self._calls:
            if not self._watch_call(_Pass(call, note), consumers, seen, inner.get(id(call), ())):
                current.unreached.append(call)
        contained = self.contain.hook
        # One bound method for every node (equal for every backward: a retained graph run
        # again keeps one), on the one hook each node already has (node_hooks.py).
        on_run = self._node_released if keep_graph else self._node_starting
        node_hooks = self._node_hooks
        origins = self._placement.origins
        # param_grad firings take their parameter's AccumulateGrad node from here.
        accumulator = None if self._param_grads is None else self._param_grads.note_accumulator
        for node in graph:
            if accumulator is not None and nodes.name_of(node) == nodes.ACCUMULATE:
                accumulator(node)
            if create_graph:
                # What its backward builds belongs to it (grad_origins.py).
                ran = lambda grad_inputs, _outputs, n=node: origins.node_ran(n, grad_inputs, seen)  # noqa: E731
                node_hooks.handles.append(node.register_hook(contained(ran, "its autograd node hook")))
            node_hooks.on_run(node, on_run)
        if self.hunting:
            self._node_watch.watch(graph)

    def _watch_call(self, state: _Pass, consumers: dict, seen: set[int], skipped: tuple[int, ...] = ()) -> bool:
        """Watch the call's gradients in this backward; False when none of its outputs is
        in its graph. `skipped`: slots this backward stops at before they reach this call
        (`tuple_wrapper.inner_returns_of_inputs`)."""
        call = state.call
        inside = self._placement.inside
        watches = self._backwards[-1].watches
        outputs = GradWatch(len(call.slots), self._outputs_arrived, state, self._node_hooks)
        watches.append(outputs)
        early = tuple_wrapper.early_slots(call.slots, seen, skipped)
        for k, slot in enumerate(call.slots):
            if slot.edge is None or id(slot.edge[0]) not in seen or k in skipped:
                continue
            node, nr = slot.edge
            users = consumers.get((id(node), nr), [])
            # Also a node a create_graph backward built from what an op after the call saved.
            callers = [(c, p) for c, p in users if not inside(c, call)]
            if self._placement.foreign and call.own is None and len(callers) < len(users) and slot.name not in state.by_number:
                # Worker threads number their nodes from counters of their own: one made
                # there outside any module call can look made inside this call.
                state.by_number += (slot.name,)
            if not slot.before_hooks and len(callers) == len(users) and k not in early:
                outputs.watch(node, k, nr)  # pre-hook: every use outside, after tensor hooks
                continue
            # Also used inside the call (or by a node a create_graph backward built from a
            # tensor saved inside it, never the returned one): only the caller's uses.
            if slot.passthrough is not None and len(callers) > 1:
                state.merged_uses += (slot.name,)
            for consumer, position in callers:
                outputs.watch(consumer, k, position, grad_inputs=True, output_side=True)
            seed = self._backwards[-1].seeds.get((id(node), nr)) if k in early and not users else None
            if seed is not None:
                outputs.preset(k, seed)  # a root of this backward, known now (as PyTorch's wrapper, run first)
            elif not users:
                outputs.watch(node, k, nr)  # a root of this backward: its grad is the seed
            if slot.inner_hooks:
                # What arrives at the node after the module's own hooks on this output.
                self._node_hooks.add(node, False, lambda grads, k=k, nr=nr, s=state: s.set_after_hooks(k, grads[nr]))
        if not outputs.nodes:
            return False  # no output of this call reaches this backward
        if not call.input_edges:
            return True  # no input needs grad: nothing to watch there (inputs_watched stays False)
        inputs = GradWatch(call.n_args, self._inputs_arrived, state, self._node_hooks)
        watches.append(inputs)
        for i, (node, nr) in call.input_edges.items():
            users = consumers.get((id(node), nr), [])
            if i in call.hooked_inputs:
                # The module hooked this input inside forward. PyTorch's hook sees its share
                # after that hook (the module's input is a tensor of its own there). Here the
                # hook is on the caller's tensor: when every use is inside the call, what
                # reaches the input's node, after tensor hooks, is that share.
                if users and all(inside(c, call) for c, _ in users):
                    inputs.watch(node, i, nr)
                    continue
                state.before_input_hooks += (i,)
            for consumer, position in users:
                if inside(consumer, call):
                    inputs.watch(consumer, i, position, grad_inputs=True)
        state.inputs_watched = bool(inputs.nodes)
        return True

    def _node_starting(self, node) -> None:
        nodes.node_started(node)  # it may free its saved tensors from now on (nodes.py)
        self._release(_seq(node))

    def _node_released(self, node) -> None:
        self._release(_seq(node))

    def _release(self, seq: int | None) -> None:
        """A node with sequence number `seq` is about to run: every armed wrapper created
        after it (key above `seq`) would have run first, newest first."""
        if not self._backwards:
            return
        armed = self._backwards[-1].armed
        while armed and (seq is None or -armed[0][0] > seq):
            heapq.heappop(armed)[3]()

    def _arm(self, key: tuple[int, int], fire: Callable[[], None]) -> None:
        if not self._backwards:
            fire()
            return
        heapq.heappush(self._backwards[-1].armed, (-key[0], -key[1], next(self._tick), fire))

    # -- backward: firings ------------------------------------------------------------
    def _grad_outputs_arrived(self, state: _Pass, grads: list, _nodes: list) -> None:
        self._on_grad_output(state, grads)

    def _on_grad_output(self, state: _Pass, grads: list) -> None:
        grads = list(grads)
        self._arm(state.call.out_key, lambda: self._fire_grad_output(state, grads))

    def _fire_grad_output(self, state: _Pass, grads: list) -> None:
        call = state.call
        tensors, live = [], {}
        for k, (slot, grad) in enumerate(zip(call.slots, grads)):
            extra = {"target": slot.target, "extra": slot.extra}
            if slot.missing is not None:
                record, grad = stats.missing(slot.name, slot.missing, **extra), None
            elif grad is None and len(call.slots) > 1 and self._backwards and tuple_wrapper.skipped_path(slot, self._backwards[-1].seen):
                record = stats.missing(slot.name, tuple_wrapper.UNNEEDED_ELEMENT, **extra)
            elif grad is None:
                record = stats.missing(slot.name, "no gradient reached this output (the loss does not depend on it)", **extra)
            else:
                record = self.describe(slot.name, grad, note=slot.note, **extra)
            tensors.append(record)
            live[slot.name] = grad
            after = state.after_hooks.get(k)
            if grad is not None and after is not None and not torch.equal(sharded.local(after), sharded.local(grad)):
                name = f"{slot.name} after the module's hooks"
                tensors.append(
                    self.describe(
                        name, after, target=slot.target, extra=True,
                        note="what the module's own backward consumes: a tensor hook it put on this output inside "
                        "forward changed the gradient after backward_pre (where PyTorch's hook sees the value before)",
                    )
                )
                live[name] = after
        self.fire_call(call, "backward_pre", tensors, live, node=call.output_node, notes=self._notes(state),
                       scope={"grad_output": tuple(None if s.missing else g for s, g in zip(call.slots, grads))})
        state.grad_outputs = list(grads)
        state.after_hooks = NOTHING
        self._nones_upstream(call, grads)
        if _is_compiled_wrapper(call.module):
            return  # PyTorch never fires the full backward hook of torch.compile's wrapper
        if not call.input_edges:
            # No input needs grad: PyTorch fires early, from the output wrapper.
            self._fire_grad_input(state, [None] * call.n_args, [], early=True)
        elif state.pending_inputs is not None:
            pending, state.pending_inputs = state.pending_inputs, None
            self._on_grad_input(state, *pending)
        elif not state.inputs_watched and any(s.passthrough is not None for s in call.slots):
            self._on_grad_input(state, [None] * call.n_args, [])  # inputs returned unchanged only
        # Inputs need grad but nothing in this call reaches them: PyTorch's full backward
        # hook never fires then (its input node never runs).

    def _on_grad_input(self, state: _Pass, grads: list, watched_nodes: list) -> None:
        if _is_compiled_wrapper(state.call.module):
            return
        edges = state.call.input_edges
        if edges and not state.zeros and not any(tuple_wrapper.will_run(node) for node, _ in edges.values()):
            # This backward wants no input's gradient (torch.autograd.grad(inputs=...)
            # asks for others): PyTorch's input wrapper never runs, nor its hook.
            return
        if state.grad_outputs is None:
            # The inputs' nodes ran before backward_pre fired: fire after it.
            state.pending_inputs = (list(grads), list(watched_nodes))
            return
        grads, watched_nodes = list(grads), list(watched_nodes)
        self._arm(state.call.in_key, lambda: self._fire_grad_input(state, grads, watched_nodes))

    def _fire_grad_input(self, state: _Pass, grads: list, watched_nodes: list, early: bool = False) -> None:
        call = state.call
        grads = list(grads) + [None] * (call.n_args - len(grads))
        for slot, grad in zip(call.slots, state.grad_outputs or []):
            # An input returned unchanged: the gradient of that output is its share too.
            if slot.passthrough is not None and grad is not None:
                i = slot.passthrough
                grads[i] = grad if grads[i] is None else grads[i] + grad
        tensors, live = [], {}
        any_grad = bool(call.input_edges)
        unreached_inputs = []
        for i in range(call.n_args):
            name, target = indexed("grad_input", i), indexed("args", i)
            meta = call.inputs[i] if i < len(call.inputs) else None
            grad = grads[i] if i < len(grads) else None
            if meta is None:
                tensors.append(stats.missing(name, "not a tensor argument", target=target))
            elif i in call.duplicates:
                first = call.duplicates[i]
                tensors.append(
                    stats.missing(
                        name,
                        f"same tensor as args[{first}]: its gradient through this call, from all its uses, is in grad_input[{first}] "
                        "(PyTorch's full backward hook splits it per argument)",
                        target=target,
                    )
                )
                grad = None
            elif grad is not None:
                tensors.append(self.describe(name, grad, target=target))
            elif any_grad:
                # PyTorch's full backward hook passes zeros here (of the input's dtype), not None.
                why = "this input does not require grad" if not meta.requires_grad else "no gradient flowed to this input through this call"
                if meta.requires_grad and i in call.input_edges:
                    unreached_inputs.append(i)
                grad = torch.zeros((), dtype=meta.dtype, device=meta.device).expand(meta.shape)
                tensors.append(self.describe(name, grad, target=target, note=f"zeros: {why} (PyTorch's full backward hook passes zeros)"))
            else:
                tensors.append(stats.missing(name, "this input does not require grad", target=target))
            live[name] = grad
        notes = self._notes(state)
        for i in state.before_input_hooks:
            notes.append(
                f"grad_input[{i}] is before the gradient hook this module put on args[{i}] inside forward (PyTorch's "
                "hook sees it after): that input is also used outside the call, and hooktui cannot apply the hook to "
                "this call's share alone"
            )
        if early and call.nested_inputs:
            nested = ", ".join(call.nested_inputs)
            notes.append(
                "fired early, right after backward_pre and before the backward of this module's children: no positional "
                f"argument is itself a tensor that requires grad ({nested} does, nested inside an argument such as a "
                "PackedSequence; PyTorch's full backward hook sees only top-level tensors, so its grad_input is None "
                "there too)"
            )
        elif early:
            notes.append(
                "fired early, right after backward_pre and before the backward of this module's children: "
                "none of its positional inputs requires grad (PyTorch's full backward hook does the same)"
            )
        node = watched_nodes[0] if watched_nodes else call.output_node
        self.fire_call(call, "backward", tensors, live, node=node, notes=notes,
                       scope={"grad_output": tuple(state.grad_outputs or ()), "grad_input": tuple(live.values())})
        # Fired: the grad_outputs kept for it go (not None: backward_pre has fired), as
        # PyTorch's BackwardHook lets go of them once its hook has run.
        state.grad_outputs = []
        if unreached_inputs and not early:
            self._zeros_upstream(call, unreached_inputs)

    def _nones_upstream(self, call: _Call, grads: list) -> None:
        """Elements of `call`'s tuple output that this backward does not reach, while it
        reaches another element (backward from `output[0]` alone). PyTorch's output wrapper
        is one node for the whole tuple: it runs, and passes None on for those elements, so
        the calls that made them fire too: backward_pre with None, then their backward with
        zeros (their input wrapper turns None into zeros, which go on upstream:
        `_zeros_upstream`), or early with None when no input of theirs needs grad. The None
        goes through plain ops, and through the calls that need no input grad, down to the
        first input wrapper on each path."""
        if not self._backwards:
            return
        current = self._backwards[-1]
        start = [slot.edge[0] for slot, grad in zip(call.slots, grads)
                 if grad is None and slot.edge is not None and not slot.extra
                 and id(slot.edge[0]) not in current.seen and id(slot.edge[0]) not in current.nulled]
        if not start or not current.unreached:
            return
        region = tuple_wrapper.reach(start, current.seen)
        current.nulled |= region
        blocked: set[int] = set()  # past an input wrapper: zeros, not None
        why = (f"None: this backward does not reach this output, made for an element of the tuple {call.name or 'the root'} "
               "returned, while it reaches another element; PyTorch's hook wrapper on that tuple passes None on for it, "
               "so this call's hooks fire too")
        note = why if current.note is None else f"{current.note}; {why}"
        # Outermost first: a call's input wrapper stops the None before the calls that made its inputs.
        for other in sorted(current.unreached, key=lambda c: c.out_key, reverse=True):
            hit = any(s.edge is not None and not s.extra and id(s.edge[0]) in region and id(s.edge[0]) not in blocked
                      for s in other.slots)
            if not hit:
                continue
            current.unreached.remove(other)
            state = _Pass(other, note, zeros=True)
            self._on_grad_output(state, [None] * len(other.slots))
            if other.input_edges:
                blocked |= tuple_wrapper.reach([node for node, _ in other.input_edges.values()], current.seen)
                self._on_grad_input(state, [None] * other.n_args, [])

    def _zeros_upstream(self, call: _Call, inputs: list[int]) -> None:
        """Inputs of `call` that need grad but got none through it (used only where no
        gradient flows: `mask = y > 0`). PyTorch's input wrapper still passes zeros on for
        them, which runs the backward of everything they came from, with zeros, where this
        backward does not reach it otherwise: the calls there fire, as here."""
        if not self._backwards:
            return
        current = self._backwards[-1]
        region: set[int] = set()
        frontier = [call.input_edges[i][0] for i in inputs]
        while frontier:
            node = frontier.pop()
            if node is None or id(node) in current.seen or id(node) in region:
                continue
            region.add(id(node))
            frontier.extend(nxt for nxt, _ in node.next_functions if nxt is not None)
        if not region:
            return
        current.seen |= region  # zeros reach each of them once
        why = (f"zeros: the outputs it returned reach the loss only through an input of {call.name or 'the root'} "
               "used without a gradient (a comparison, a mask); PyTorch's input wrapper passes zeros on for it, "
               "so its hooks fire")
        note = why if current.note is None else f"{current.note}; {why}"
        for other in list(current.unreached):
            hit = {k for k, slot in enumerate(other.slots) if slot.edge is not None and not slot.extra and id(slot.edge[0]) in region}
            if not hit:
                continue
            current.unreached.remove(other)
            state = _Pass(other, note, zeros=True)
            self._on_grad_output(state, [slot.zeros() if k in hit else None for k, slot in enumerate(other.slots)])
            if other.input_edges:
                self._on_grad_input(state, [None] * other.n_args, [])

    @staticmethod
    def _notes(state: _Pass) -> list[str]:
        notes = [] if state.note is None else [state.note]
        if _is_compiled_wrapper(state.call.module):
            notes.append(
                "torch.compile's wrapper (OptimizedModule): PyTorch fires its backward pre-hook but never its "
                "full backward hook, so this call has no backward firing; see _orig_mod's"
            )
        for name in state.by_number:
            notes.append(
                f"{name} leaves out uses of that output judged to be inside this call by their autograd sequence "
                "number; modules of this run were called on other threads, whose numbers can coincide (a use made "
                "on a worker thread outside any module call may have been left out)"
            )
        for name in state.merged_uses:
            notes.append(
                f"{name} is an input returned unchanged, used more than once after this call: it sums every later use "
                "of that tensor, also those that did not come through this call's return value (PyTorch's hook counts "
                "only those that did; the caller holds one tensor, so hooktui cannot tell them apart)"
            )
        if not state.call.pytorch_fires:
            notes.append("PyTorch's own full backward hooks do not fire for this call: no tensor or tuple of tensors needing grad is returned")
        return notes

    def backward_returned(self) -> None:
        """The step's backward has returned (the callbacks it queued for its end have run):
        the final .grad where param_grad showed another gradient (final_grads.py). None
        without param_grad firings."""
        kinds = self._param_grads.kinds if self._param_grads is not None else None
        if kinds is not None:
            fire_final_grads(self, kinds)

    # -- for the finer firing kinds (param_grads.py, legacy.py, node_steps.py) -------------
    @property
    def node_hooks(self) -> NodeHooks:
        return self._node_hooks

    def last_forward_index(self, module_name: str) -> int | None:
        return self._last_forward.get(module_name)

    def reached_calls(self, module_name: str) -> list[tuple[int, int | None]] | None:
        """(call, index of its forward firing) of each call of `module_name` whose outputs the
        running backward reaches (what a parameter's gradient sums), in call order; None
        outside a backward."""
        if not self._backwards:
            return None
        seen = self._backwards[-1].seen
        return [(call.index, call.forward_index) for call in self._calls_of.get(module_name, ())
                if any(slot.edge is not None and id(slot.edge[0]) in seen for slot in call.slots)]

    def call_count(self, module_name: str) -> int:
        return self._counts.get(module_name, 0)

    def module_named(self, module_name: str) -> nn.Module:
        return self._modules[module_name]

    def step_into(self, call: _Call) -> int:
        """Hook the autograd nodes of `call` so each one fires (node_pre / node)."""
        return self._node_steps.expand(call) if call is not None and call.output_edges else 0

    def fire_born_node(self, node, grad_inputs, grad_outputs, line: SourceLocation | None) -> None:
        """The first node that made a non-finite gradient from finite ones (hunt.py)."""
        call = hunt.innermost_call(self._calls, node)
        tensors, live = hunt.node_tensors(self, node, grad_inputs, grad_outputs, hunt.call_edges(call))
        scope = {"grad_output": tuple(grad_outputs), "grad_input": tuple(grad_inputs)}
        self.fire_event(**self._born_node_fields(node, call, tensors, line), live=live, scope=scope)

    def born_node_event(self, found: hunt.NodeCandidate) -> Event:
        """The node firing a deferred hunt found at the step's end, not emitted: numbered
        as it would have been had it fired while the step ran, N.1 after the plain firing
        N before it (firing.py; no other node firing is made while a guard runs)."""
        return self.make_event(index=max(found.position - 1, 0), sub=1,
                               **self._born_node_fields(found.node, found.call, found.tensors, found.line))

    def _born_node_fields(self, node, call, tensors: list[TensorRecord], line: SourceLocation | None) -> dict:
        op = nodes.name_of(node)
        notes = [f"the first autograd node whose gradients are not finite while those it received are: {op}"]
        notes.append(Note("created_at", f"created in forward at {hunt.short(line)}") if line is not None
                     else Note("created_unknown", "the line that created it is unknown (the non-finite breakpoint was set "
                               "after the forward pass, or the op is hooktui's default loss)"))
        if call is None:
            notes.append(Note("made_outside", "made outside every module call (in the loss, or between the calls of the root module)"))
            return dict(hook="node", module=self.model, call=max(self._counts.get("", 1) - 1, 0), tensors=tensors,
                        node=node, source=line, notes=notes)
        return dict(hook="node", module=call.module, call=call.index, tensors=tensors, node=node,
                    source=line or call.source, forward_index=call.forward_index, notes=notes, call_state=call)

    def deferred_notes(self, event: Event) -> list[str] | None:
        """The creation notes a hunting firing would have had (`defer_hunt`), once its
        records' non-finite counts are known."""
        sources = self.note_sources.get(event.index)
        if not sources:
            return None
        return _node_notes([(name, node) for name, node in sources], event.tensors)

    def _hunt_notes(self, tensors: list[tuple[str, torch.Tensor]], records: list[TensorRecord]) -> list[str] | None:
        if self.defer_hunt:
            self.note_sources[self._numbers.taken] = [(name, t.grad_fn) for name, t in tensors]
            return None
        return _creation_notes(tensors, records)

    def describe(self, name: str, tensor: torch.Tensor, **extra) -> TensorRecord:
        """The record of `tensor`; a summary that fails is a missing record saying why
        (contain.py): the firing keeps its other tensors, the model never sees the error."""
        try:
            return stats.describe(name, tensor, self.options, **extra)
        except Exception as exc:
            return stats.missing(name, f"{SUMMARY_FAILED}: {failure_text(exc)}", **extra)

    def _describe_all(self, tensors: list[tuple[str, torch.Tensor]]) -> list[TensorRecord]:
        """describe() of each (name, tensor) of a forward firing, in one call (these are
        most of a run's summaries)."""
        options = self.options
        records = []
        for name, tensor in tensors:
            try:
                records.append(stats.describe(name, tensor, options))
            except Exception as exc:
                records.append(stats.missing(name, f"{SUMMARY_FAILED}: {failure_text(exc)}"))
        return records

    def missing(self, name: str, reason: str, **extra) -> TensorRecord:
        return stats.missing(name, reason, **extra)

    def fire_call(self, call: _Call, hook: str, tensors: list[TensorRecord], live: dict, node, notes: list[str] | None = None,
                  scope: dict | None = None) -> int:
        """Emit one firing of `call`; returns its index (firing.py numbers it by its kind).
        fire_event's path, with the call's name and type as the pre-hook found them: this
        runs for most firings."""
        forward_index = None if hook == "forward_pre" or hook == "forward" else call.forward_index
        with self._firing:
            index, sub = self._numbers.take(hook)
            event = self._event(index, sub, hook, call.name, call.type, call.index, tensors, node, call.source,
                                forward_index, notes, None)
            self.contain.emit(self.emit, event, LiveFiring(event, call.module, live, node, call, scope))
            return index

    def fire_event(self, *, live: dict, scope: dict | None = None, call_state=None, module: nn.Module | None, **fields) -> int:
        """The one path of every firing: numbered (firing.py), given the notes pending, and
        emitted under the firing lock, so that firings from several threads come in index order."""
        with self._firing:  # one firing at a time, indices in order, whichever thread fires
            index, sub = self._numbers.take(fields["hook"])  # node firings: N.k (firing.py)
            event = self.make_event(index=index, module=module, sub=sub, **fields)
            self.contain.emit(self.emit, event, LiveFiring(event=event, module=module, tensors=live, node=fields.get("node"), call=call_state,
                                        scope=scope))
            return event.index

    def make_event(self, *, index: int, hook: str, module: nn.Module | None, call: int, tensors: list[TensorRecord], node,
                   source=None, forward_index: int | None = None, notes: list[str] | None = None, call_state=None,
                   sub: int = 0, facts: tuple[str, str] | None = None, user_hook: UserHookCall | None = None) -> Event:
        """`facts`: (module name, type name) when they are not those of `module` (a user hook
        on a tensor has no module)."""
        if facts is not None:
            name, type_name = facts
        else:
            name, type_name = self._module_facts.get(id(module)) or ("", type(module).__name__)
        return self._event(index, sub, hook, name, type_name, call, tensors, node, source, forward_index, notes, user_hook)

    def _event(self, index: int, sub: int, hook: str, name: str, type_name: str, call: int, tensors: list[TensorRecord],
               node, source, forward_index: int | None, notes: list[str] | None, user_hook: UserHookCall | None) -> Event:
        failed = self.contain.take_pending()  # hooktui failures before the first firing
        if failed:
            notes = [*(notes or ()), *failed]
        if node is None:
            grad_fn = record = None
        else:
            grad_fn, record = nodes.described(node)
        return Event(
            index=index,
            phase=self.phase,
            hook=hook,
            module=name,
            module_type=type_name,
            call=call,
            grad_fn=grad_fn,
            tensors=tensors,
            source=source,
            node=record,
            forward_index=forward_index,
            notes=notes or NO_NOTES,
            sub=sub,
            user_hook=user_hook,
        )


def _edge(tensor: torch.Tensor) -> tuple[Any, int]:
    """The gradient edge (node, output_nr) of a tensor that requires grad: get_gradient_edge
    without its cost for the common case, a tensor made by an op."""
    node = tensor.grad_fn
    if node is not None:
        return node, tensor.output_nr
    edge = get_gradient_edge(tensor)
    return edge.node, edge.output_nr


def _hook_count(tensor: torch.Tensor) -> int:
    hooks = tensor._backward_hooks
    return 0 if hooks is None else len(hooks)


def _after_the_run(_event: Event, _live: LiveFiring) -> None:
    """A hook left on a tensor of the run (user_hooks.py) firing after it ended: not recorded."""


def _kwargs_apart_from_args(kwargs: dict, input_edges: dict[int, tuple[Any, int]]) -> dict | None:
    """kwargs with a view in place of each tensor that is also a positional input needing
    grad (`inner(h, y=h)`), so its uses get a node of their own; None when none is."""
    wanted = {(id(node), nr) for node, nr in input_edges.values()}
    changed = None
    for key, value in kwargs.items():
        if isinstance(value, torch.Tensor) and value.requires_grad:
            edge = get_gradient_edge(value)
            if (id(edge.node), edge.output_nr) in wanted:
                changed = dict(kwargs) if changed is None else changed
                changed[key] = value.view_as(value)
    return changed


def _creation_notes(tensors: list[tuple[str, torch.Tensor]], records: list[TensorRecord]) -> list[str] | None:
    """While hunting: for each non-finite tensor, the op and the user line that made it."""
    return _node_notes([(name, tensor.grad_fn) for name, tensor in tensors], records)


def _node_notes(made_by: list[tuple[str, Any]], records: list[TensorRecord]) -> list[str] | None:
    notes = []
    for (name, node), record in zip(made_by, records):
        counts = record.nonfinite_counts
        if not counts or not any(counts):
            continue
        line = hunt.creation_line(node)
        if node is None:
            notes.append(Note("not_finite", f"{name} is not finite and was made with no grad_fn (no autograd history)", about=name))
        elif line is not None:
            notes.append(Note("not_finite", f"{name} is not finite: made by {nodes.name_of(node)} at {hunt.short(line)}", about=name))
        else:
            notes.append(Note("not_finite", f"{name} is not finite: made by {nodes.name_of(node)}", about=name))
    return notes or None


def _is_compiled_wrapper(module: nn.Module) -> bool:
    return type(module).__name__ == "OptimizedModule" and hasattr(module, "_orig_mod")


_seq = nodes.seq_of
