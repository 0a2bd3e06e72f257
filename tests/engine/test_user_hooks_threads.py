"""The model's own hooks fired from two threads at once: `user_hook` firings go through the
tracer's one firing path (its lock, firing.Counter's numbers, the notes pending), so they
come in index order among every other firing, each number given once.

One run (a `Session` with a step) whose step starts two threads, each running a forward
and a backward of the same model, which carries hooks of its own. What the hooks received
is written down by the hooks themselves (plain PyTorch, no hooktui), and compared with
what the `user_hook` firings say they received.
"""

from __future__ import annotations

import math
import sys
import threading

import torch

from hooktui.engine.run.session import Session
from small_models import Two

PLANTED = "a failure planted before the first firing"
STEPS = 5  # forward + backward in each thread


def _inputs(seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(8, 4, generator=g)


def test_user_hook_firings_from_two_threads_come_in_index_order_with_pending_notes():
    torch.manual_seed(0)
    model = Two()
    seen: list[tuple[str, float]] = []  # (hook, norm of what it received), written by the hooks alone
    seen_lock = threading.Lock()

    def root_pre(module, args):  # runs before hooktui's own hooks on the root: a run's first firing
        with seen_lock:
            seen.append(("root_pre", float(args[0].detach().double().norm())))

    def fc1_out(module, args, output):
        with seen_lock:
            seen.append(("fc1_out", float(output.detach().double().norm())))

    def fc2_weight_grad(grad):
        with seen_lock:
            seen.append(("fc2_weight_grad", float(grad.double().norm())))

    model.register_forward_pre_hook(root_pre)
    model.fc1.register_forward_hook(fc1_out)
    model.fc2.weight.register_hook(fc2_weight_grad)

    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def one_thread(seed: int) -> None:
        try:
            barrier.wait(timeout=60)
            for _ in range(STEPS):
                model(_inputs(seed)).sum().backward()
        except BaseException as exc:  # said by the assert below
            errors.append(exc)

    def step():
        threads = [threading.Thread(target=one_thread, args=(seed,)) for seed in (1, 2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        return model(_inputs(3)).sum()  # the session's own backward starts from this loss

    session = Session(model, step=step, pause=False)
    emitted = []

    def planted(state: str) -> None:
        # The run has started and nothing has fired yet: a failure of hooktui's now is
        # pending (contain.py), for whichever firing comes first to carry.
        if state == "running":
            session._tracer.contain.failed(PLANTED, RuntimeError("planted"))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch often: a firing numbered but emitted late would show
    try:
        trace = session.run(on_event=emitted.append, on_state=planted)
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors
    assert trace.error is None, trace.error
    assert emitted == list(trace.events)

    numbers = [e.key for e in emitted]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)  # strictly increasing
    indices = [e.index for e in emitted if e.sub == 0]
    assert all(a < b for a, b in zip(indices, indices[1:]))

    # The first firing is a user hook's (the root's forward pre-hook, which runs before
    # hooktui's own), and it carries the note pending before it, as any firing would.
    first = emitted[0]
    assert first.hook == "user_hook" and first.user_hook.hook.function.endswith("root_pre")
    assert any(PLANTED in note for note in first.notes), first.notes
    assert sum(PLANTED in note for e in emitted for note in e.notes) == 1
    # Every user_hook firing names its hook in its first note.
    users = [e for e in emitted if e.hook == "user_hook"]
    assert all(e.notes[0].startswith("your hook ") for e in users)

    # Each hook fired as often as it ran, and each firing received what the hook did:
    # 2 threads x STEPS, and the session's own forward and backward.
    by_hook: dict[str, list[float]] = {}
    for hook, norm in seen:
        by_hook.setdefault(hook, []).append(norm)
    assert {hook: len(norms) for hook, norms in by_hook.items()} == {hook: 2 * STEPS + 1 for hook in ("root_pre", "fc1_out", "fc2_weight_grad")}
    fired: dict[str, list[float]] = {}
    received = {"root_pre": "args[0]", "fc1_out": "output", "fc2_weight_grad": "grad"}
    for event in users:
        hook = event.user_hook.hook.function.rpartition(".")[2]
        record = next(t for t in event.tensors if t.name == received[hook])
        fired.setdefault(hook, []).append(record.stats.norm)
    for hook, norms in by_hook.items():
        assert len(fired[hook]) == len(norms), hook
        for got, want in zip(sorted(fired[hook]), sorted(norms)):
            assert math.isclose(got, want, rel_tol=1e-5, abs_tol=1e-6), (hook, got, want)
