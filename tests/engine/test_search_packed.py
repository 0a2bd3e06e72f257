"""The `/` search over a packed history (engine/analysis/search.py `Search.positions`, read from
engine/records/held.py's columns): the positions it finds are those `Search.matches` finds
reading each record of the same firings held as a plain list, built separately, for many
queries and with legacy firings hidden or not, and no chunk is unpacked to find them.

The firings are tests/uneven_firings.py's `searchable_firings` (legacy, sub-numbered and
recompute firings, the model's own hooks, a failed run's `error`; gradients beside the
output, a missing tensor, one without statistics, NaN, +Inf and -Inf firings, some of them in
the firings after the last whole chunk, held as records, never packed). A live run's store,
packed while the run goes on, is compared with the run's own records too."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from hooktui.engine.analysis.search import parse_search
from hooktui.engine.records import held
from hooktui.engine.records.records import Event
from hooktui.engine.run.session import Session
from hooktui.engine.summaries import lazy_stats

from nan_models import zero_variance_model
from uneven_firings import counting_decodes, packed, searchable_firings

QUERIES = [
    "a", "b", "(root)", "root", "*b*", "c", "d", "[ab]", "module:a",
    "kind:backward_pre", "kind:legacy_bwd", "hook:backward*", "kind:node*", "kind:error", "kind:user_hook",
    "phase:fwd", "phase:bwd a", "phase:backward c", "phase:bwd kind:forward d",
    "tensor:output", "tensor:grad_input", "tensor:grad_input[0]", "tensor:grad_input[1]", "tensor:grad*",
    "tensor:out* tensor:grad_output", "tensor:GRAD_OUTPUT[0] phase:bwd",
    "nan", "inf", "nonfinite", "nan inf", "nan b", "inf phase:bwd", "kind:backward tensor:grad_input nonfinite",
    "nosuchmodule", "kind:forward_pre phase:bwd d",
]


def _expected(events: list[Event], query: str, hidden: set[str], start: int = 0, end: int | None = None) -> list[int]:
    search = parse_search(query)
    end = len(events) if end is None else end
    return [at for at, e in enumerate(events) if start <= at < end and e.hook not in hidden and search.matches(e)]


@pytest.fixture
def decodes(monkeypatch) -> list[int]:
    return counting_decodes(monkeypatch)


def test_the_search_finds_in_a_packed_history_what_it_finds_in_its_records_unpacking_nothing(decodes):
    store, plain = packed(searchable_firings()), searchable_firings()
    tail = range(store.packed, len(store))
    assert any(e.hook == "error" for e in plain) and len(tail) > 4
    hits = {}
    for hidden in (set(), {"legacy_backward"}):
        for query in QUERIES:
            found = parse_search(query).positions(store, hidden=hidden)
            assert found == _expected(plain, query, hidden), (query, hidden)
            hits[query, frozenset(hidden)] = found
    assert decodes == []  # every packed firing decided from the columns
    # The queries do what they are here for: matches and non-matches, packed and in the tail.
    for query in ("nan", "inf", "tensor:grad_input", "kind:error"):
        assert any(at in tail for at in hits[query, frozenset()]), query
    assert hits["kind:legacy_bwd", frozenset({"legacy_backward"})] == [] != hits["kind:legacy_bwd", frozenset()]
    empty = ("nosuchmodule", "kind:forward_pre phase:bwd d", "tensor:grad_input[1]")  # the last: only ever missing
    assert all(hits[q, frozenset()] == [] for q in empty)
    assert all(hits[q, frozenset()] for q in QUERIES if q not in empty)


def test_a_search_caught_up_piece_by_piece_finds_what_one_scan_finds(decodes):
    """As the app's Matches catches up while the history grows: from a position in a chunk,
    up to one in another, then on into the tail."""
    store, plain = packed(searchable_firings()), searchable_firings()
    cuts = [0, 5, held.CHUNK + 7, 3 * held.CHUNK, store.packed - 1, store.packed + 2, len(store)]
    for query in ("b", "tensor:grad_output nonfinite", "phase:bwd inf"):
        search = parse_search(query)
        pieces = [search.positions(store, lo, hi, {"legacy_backward"}) for lo, hi in zip(cuts, cuts[1:])]
        assert [at for piece in pieces for at in piece] == _expected(plain, query, {"legacy_backward"})
        assert pieces[1] == _expected(plain, query, {"legacy_backward"}, cuts[1], cuts[2])
    assert decodes == []


def test_firings_past_the_columns_vocabulary_are_read_from_their_records(decodes, monkeypatch):
    """A tensor-name set past the column's codes (65,535 in a real store, 3 here) is read
    from its record: the same positions, only the chunks holding one unpacked."""
    monkeypatch.setattr(held, "NO_NAMES", 3)
    store, plain = packed(searchable_firings()), searchable_firings()
    unknown = [at for at in range(store.packed) if store._names[at] == 3]
    assert unknown and len(store._name_sets) == 3
    for query in ("tensor:grad_input", "tensor:output nan", "a inf"):
        assert parse_search(query).positions(store) == _expected(plain, query, set()), query
    assert 0 < len(decodes) <= 3 * len({at // held.CHUNK for at in unknown})


def test_firings_of_kinds_past_the_hook_column_s_codes_are_read_from_their_records(decodes):
    """A store that met 255 other hook kinds first (a trace file's firings can name any) has
    no byte for the kinds after them: those firings are read, the same positions found."""

    def made() -> list[Event]:
        odd = [Event(index=at, phase="forward", hook=f"odd_{at}", module="z", module_type="Z", call=0, tensors=[])
               for at in range(255)]
        rest = searchable_firings()
        for event in rest:
            event.index += 255
        return odd + rest

    store, plain = packed(made()), made()
    assert store.hook_at(300) == plain[300].hook and store._hooks[300] == 255
    for query in ("kind:backward_pre", "phase:bwd a", "nan", "z", "z tensor:output", "kind:forward* tensor:output"):
        for hidden in (set(), {"legacy_backward"}):
            assert parse_search(query).positions(store, hidden=hidden) == _expected(plain, query, hidden), query
    assert decodes  # read, not guessed


def test_a_store_packed_while_a_live_run_goes_on_finds_what_the_run_s_records_say(monkeypatch):
    """The app's history (packs_at_run_end=False) filled by a Session as it runs, NaN made by
    the model: the flags packed from the live records' summaries, as `Search.matches` reads
    the records the run gave (a list of them kept beside)."""
    monkeypatch.setattr(held, "PACK_AFTER", 0)
    monkeypatch.setattr(lazy_stats, "SNAPSHOT_BUDGET_BYTES", 2048)  # summaries settle within a small run
    torch.manual_seed(0)
    blocks = [nn.Sequential(nn.Linear(16, 16), nn.Tanh()) for _ in range(12)]
    model = nn.Sequential(zero_variance_model(), nn.Linear(2, 16), *blocks)
    store = held.HeldEvents(packs_at_run_end=False)
    given: list[Event] = []

    def keep(event: Event) -> None:
        store.append(event)
        given.append(event)

    Session(model, torch.randn(4, 2), pause=False, legacy=True, keep_events=False).run(on_event=keep)
    assert store.packed >= 2 * held.CHUNK
    nans = _expected(given, "nan", set())
    assert nans and nans[0] < store.packed  # a NaN firing among those packed
    for query in ("nan", "nonfinite 12", "kind:backward* tensor:grad_input", "phase:bwd 3", "tensor:output[0]", "inf"):
        for hidden in (set(), {"legacy_backward"}):
            assert parse_search(query).positions(store, hidden=hidden) == _expected(given, query, hidden), query
