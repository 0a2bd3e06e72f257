"""Calls that must not hang, checked without timing them: the call runs in a thread and the
test fails if it has not returned within a generous safety net (a loaded machine is slow,
a hang is forever). No test asserts how long something took: speed is for benchmarks/."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

SAFETY_NET = 120.0  # seconds; only a hang comes near it


def finishes(call: Callable[..., Any], *args: Any, within: float = SAFETY_NET, **kwargs: Any) -> Any:
    """`call(*args, **kwargs)`'s result, or its exception raised here; fails if it hangs."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["result"] = call(*args, **kwargs)
        except BaseException as error:  # noqa: BLE001 - handed to the test's thread
            outcome["error"] = error

    thread = threading.Thread(target=target, daemon=True, name=f"finishes:{getattr(call, '__name__', call)}")
    thread.start()
    thread.join(within)
    assert not thread.is_alive(), f"{getattr(call, '__name__', call)} did not return within {within:.0f} s: it hangs"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]
