"""A run's worth of firings that make a history uneven (tests of reads of a packed history:
tests/engine/test_held_reads.py, tests/ui/test_ui_packed_reads.py): legacy firings (hidden
in the app), sub-numbered node firings, forward firings in the backward (a checkpoint's
recompute), the model's own hooks, a call a column cannot hold, a failed run's `error`; and
the same with tensors that vary, for the `/` search (tests/engine/test_search_packed.py,
tests/ui/test_ui_search_packed.py)."""

from __future__ import annotations

from hooktui.engine.records import held
from hooktui.engine.records.records import Event, TensorRecord, TensorStats
from hooktui.engine.records.user_hook_records import UserHookCall, UserHookInfo

KINDS = ("forward_pre", "forward", "backward_pre", "backward", "legacy_backward", "param_grad", "node_pre", "node",
         "user_hook", "error")


def firings(n_calls: int = 40) -> list[Event]:
    """A run's worth of uneven firings; new objects each call (the store and the list share none)."""
    hooks = [UserHookInfo(id=7, kind="forward", owner="b", function="mine"), UserHookInfo(id=9, kind="tensor", owner="t", function="other")]
    events: list[Event] = []

    def fire(phase, hook, module, call, sub=0, **extra):
        stats = TensorStats(count=4, finite=4, min=-1.0, max=float(call), mean=0.5, std=1.0, absmax=float(call), norm=2.0,
                            hist=[1, 3], hist_range=[-1.0, float(call)])
        tensors = [TensorRecord("output", [2, 2], "float32", "cpu", stats=stats, values=[0.5, 1.5, -1.0, 2.0], values_shape=[2, 2])]
        index = events[-1].index + (0 if sub else 1) if events else 0
        events.append(Event(index=index, phase=phase, hook=hook, module=module, module_type=module.upper() or "Net",
                            call=call, tensors=tensors, sub=sub, **extra))

    for call in range(n_calls):
        for module in ("a", "b", "") + (("c",) if call % 5 == 0 else ()):
            fire("forward", "forward_pre", module, call)
            fire("forward", "forward", module, call)
            if module == "b" and call % 3 == 0:
                fire("forward", "user_hook", module, call, user_hook=UserHookCall(hooks[0]))
        for module in ("", "b", "a"):
            fire("backward", "backward_pre", module, call)
            fire("backward", "legacy_backward", module, call)
            if module == "b" and call % 5 == 0:  # a checkpoint's recompute: forward firings in the backward
                fire("backward", "forward_pre", "c", call)
                fire("backward", "forward", "c", call)
                fire("backward", "forward", "d", call)  # one never seen in the forward: no row
            fire("backward", "backward", module, call)
            if module == "a" and call % 4 == 1:  # stepped into: sub-numbered node firings
                fire("backward", "node_pre", module, call, sub=1)
                fire("backward", "node", module, call, sub=2)
        fire("backward", "param_grad", "a", call)
        if call % 7 == 3:
            fire("backward", "user_hook", "", call, user_hook=UserHookCall(hooks[1], returned="replaced"))
    fire("backward", "param_grad", "a", -3)  # a call the column cannot hold: read from the record
    fire("backward", "error", "b", n_calls)
    return events


def _stats(nan: int = 0, posinf: int = 0, neginf: int = 0) -> TensorStats:
    return TensorStats(count=4, finite=4 - nan - posinf - neginf, min=-1.0, max=1.0, mean=0.0, std=1.0, absmax=1.0,
                       norm=2.0, nan=nan, posinf=posinf, neginf=neginf, nonfinite=nan + posinf + neginf)


def searchable_firings() -> list[Event]:
    """uneven_firings' firings with their tensors made to vary (new objects each call)."""
    events = firings()
    last = len(events)
    for at, event in enumerate(events):
        tensors = event.tensors
        if at % 3 == 1:
            tensors.append(TensorRecord("grad_output[0]", [2, 2], "float32", "cpu", stats=_stats()))
        if at % 11 == 0:
            tensors.append(TensorRecord("grad_input[0]", [2, 2], "float32", "cpu", stats=_stats()))
            tensors.append(TensorRecord("grad_input[1]", None, missing="None"))  # matches no tensor: word
        if at % 23 == 5:
            tensors.append(TensorRecord("grad_input[0]", [2, 2], "float32", "cpu"))  # no statistics
        if at % 13 == 4 or at == last - 3:
            tensors.append(TensorRecord("grad_input[0]", [2, 2], "float32", "cpu", stats=_stats(nan=1)))
        if at % 17 == 2 or at == last - 5:
            tensors[0] = TensorRecord("output", [2, 2], "float32", "cpu", stats=_stats(posinf=2))
        if at % 19 == 7:
            tensors.append(TensorRecord("grad_output[0]", [2, 2], "float32", "cpu", stats=_stats(neginf=1)))
        if at % 29 == 9:
            event.tensors = []  # none at all
    return events


def packed(events: list[Event]) -> held.HeldEvents:
    """`events` in a store packed as a run's is at its end (held.PACK_AFTER set to 0 by the caller)."""
    held.run_started()
    try:
        store = held.HeldEvents(events)
    finally:
        held.run_ended()
    assert store.packed == len(events) // held.CHUNK * held.CHUNK > len(events) - held.CHUNK
    return store


def counting_decodes(monkeypatch) -> list[int]:
    """Every store packs (PACK_AFTER 0); each chunk unpacked adds to the list returned."""
    monkeypatch.setattr(held, "PACK_AFTER", 0)
    counted: list[int] = []
    decode = held._decode

    def counting(chunk, blocks):
        counted.append(1)
        return decode(chunk, blocks)

    monkeypatch.setattr(held, "_decode", counting)
    return counted
