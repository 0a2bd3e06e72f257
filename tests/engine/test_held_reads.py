"""Reads of a whole packed history that need a few facts of each firing (engine/records/held.py's
columns): the overview's rows, each firing's kind, phase, module and call, the firings
naming a hook of the model's own.

Each is compared with the same read of a plain list of the same firings, built separately
(tests/uneven_firings.py: legacy firings, sub-numbered node firings, forward firings in the
backward, the model's own hooks, a call the column cannot hold, a failed run's `error`),
and unpacks no chunk (or only those holding a hook's firing)."""

from __future__ import annotations

import pytest

from hooktui.engine.analysis.flow import CallRows
from hooktui.engine.records import held
from hooktui.engine.records.records import firing_heads, firings_with_user_hook

from uneven_firings import KINDS, counting_decodes, firings, packed


@pytest.fixture
def decodes(monkeypatch) -> list[int]:
    return counting_decodes(monkeypatch)


def test_the_overview_s_rows_of_a_packed_history_are_those_of_its_records_unpacking_nothing(decodes):
    store, plain = packed(firings()), firings()
    assert len(store) == len(plain) > 10 * held.CHUNK
    rows, expected = CallRows(), CallRows()
    half = len(plain) // 2 + 5
    # Grown as the overview grows: what arrived, then the rest.
    assert rows.extend(store[:half]) == expected.extend(plain[:half])
    assert rows.extend(store) == expected.extend(plain)
    assert rows.rows == expected.rows and len(rows) == 3 * 40 + 8  # a, b, root each call; c every 5th
    assert [rows.row_of(e) for e in plain] == [expected.row_of(e) for e in plain]
    assert decodes == []  # the heads of the firings come from the store's columns
    assert any(r.param_grads for r in rows.rows) and not any(r.module == "d" for r in rows.rows)


def test_the_heads_and_kinds_of_a_packed_history_are_those_of_its_records_unpacking_nothing(decodes):
    store, plain = packed(firings()), firings()
    heads = [(e.hook, e.phase, e.module, e.call) for e in plain]
    assert list(firing_heads(store)) == heads
    assert list(firing_heads(store, 101)) == heads[101:] == list(firing_heads(plain, 101))
    assert {k: store.positions_where(k) for k in KINDS} == {k: [at for at, e in enumerate(plain) if e.hook == k] for k in KINDS}
    assert [store.hook_at(at) for at in range(len(store))] == [e.hook for e in plain]
    assert decodes == []


def test_the_firings_naming_a_hook_of_the_model_s_own_unpack_only_their_chunks(decodes):
    store, plain = packed(firings()), firings()
    found = firings_with_user_hook(store)
    expected = [e for e in plain if e.user_hook is not None]
    assert found == expected and len(expected) > 10
    holding = {at // held.CHUNK for at, e in enumerate(plain) if e.user_hook is not None and at < store.packed}
    assert 0 < len(decodes) <= len(holding) < len(store) // held.CHUNK


def test_a_firing_s_position_by_its_number_in_a_store_packed_or_not_is_the_plain_list_s(decodes):
    """position_of (Explain asks at every step): bisected in the packed keys and in the
    firings not packed yet alike, sub-numbers included, and None for numbers not there."""
    plain = firings()
    for store in (packed(firings()), held.HeldEvents(firings())):  # a store never packed: all of it the tail
        numbers = {(e.index, e.sub) for e in plain}
        asked = numbers | {(i, extra) for i, s in numbers if s == 0 for extra in (1, 7)} | {(-1, 0), (10**6, 0)}
        for index, sub in sorted(asked):
            want = next((p for p, e in enumerate(plain) if (e.index, e.sub) == (index, sub)), None)
            assert store.position_of(index, sub) == want, (index, sub)
    assert held.HeldEvents(firings()).packed == 0
    assert not decodes
