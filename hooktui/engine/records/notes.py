"""Notes with kinds: what the engine says about a firing or a tensor, and what kind of fact it is.

A note is shown as its text (the Tensors and Explain panes, the `trace` table, a saved
trace), so `Note` is a `str` with a `kind`: every reader of text keeps working, and the
parts that act on a note (engine/analysis/born.py, loop/guard.py, loop/guard_ranks.py) test
its kind, never its wording. A plain `str` note is a note of kind "plain".

A trace file holds notes as their text, as it always has. `typed` gives the sentences the
engine writes their kind back, once, where a line is read (engine/records/trace_file.py);
any other text stays a plain note.

No torch, no Textual: `hooktui view` reads these.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, get_args

NoteKind = Literal[
    "plain",
    # Hunting a non-finite value (engine/capture/hunt.py): on the firing whose tensor `about` is bad.
    "not_finite",  # "{about} is not finite: made by {op} at {line}"
    # On the node firing that made a bad gradient:
    "created_at",  # "created in forward at {line}"
    "created_unknown",  # the line that created the node is not known
    "made_outside",  # the node was made outside every module call (the loss, between calls)
    # On a param_grad firing under a wrapper (engine/capture/grad_kinds.py):
    "grad_kind",  # DDP's, FSDP2's or a pipeline schedule's word on which gradient this is
    "flat_param",  # "FSDP1 FlatParameter holding {params}: …"
    # On one tensor (TensorRecord.note):
    "held_grad",  # the .grad a parameter held before this backward (param_grads.py)
    "dtensor_local",  # a DTensor's local part (engine/summaries/sharded.py)
]
NOTE_KINDS: tuple[str, ...] = get_args(NoteKind)


class Note(str):
    """A note's text, with its kind (and, for a note about one tensor, that tensor's name)."""

    kind: NoteKind
    about: str | None

    def __new__(cls, kind: NoteKind, text: str, about: str | None = None) -> Note:
        note = super().__new__(cls, text)
        note.kind, note.about = kind, about
        return note

    @property
    def text(self) -> str:
        return str.__str__(self)

    def __getnewargs__(self) -> tuple:  # copy and deepcopy keep the kind
        return (self.kind, self.text, self.about)

    def __repr__(self) -> str:
        return f"Note({self.kind!r}, {self.text!r}" + (f", about={self.about!r})" if self.about is not None else ")")


def kind_of(note: str | None) -> str | None:
    """A note's kind: "plain" for text without one, None for no note."""
    return None if note is None else getattr(note, "kind", "plain")


def of_kind(notes: Iterable[str], *kinds: str) -> list[str]:
    """The notes of `kinds`, in order."""
    return [note for note in notes if getattr(note, "kind", "plain") in kinds]


# -- the sentences a trace file holds, given their kinds back ----------------------------
# The start of each sentence the engine writes for a kind (capture/tracer.py, grad_kinds.py,
# param_grads.py, summaries/sharded.py): how notes were written before they had kinds.
_STARTS: tuple[tuple[str, NoteKind], ...] = (
    ("created in forward", "created_at"),
    ("the line that created it is unknown", "created_unknown"),
    ("made outside every module call", "made_outside"),
    ("DDP", "grad_kind"),
    ("FSDP2: ", "grad_kind"),
    ("pipeline schedule ", "grad_kind"),
    ("FSDP1 FlatParameter holding ", "flat_param"),
)
_TENSOR_STARTS: tuple[tuple[str, NoteKind], ...] = (
    ("the .grad this parameter already held when the backward started", "held_grad"),
    ("DTensor: statistics and values are this rank's local part, ", "dtensor_local"),
)
_NOT_FINITE = " is not finite"
_FIRST = tuple({start[:1] for start, _ in _STARTS})


def typed(notes: list[str]) -> list[str]:
    """A firing's notes as read from a file, each known sentence as a Note of its kind."""
    return [_typed(note) for note in notes]


def _typed(note: str) -> str:
    if note.startswith(_FIRST):
        for start, kind in _STARTS:
            if note.startswith(start):
                return Note(kind, note)
    about, found, rest = note.partition(_NOT_FINITE)
    if found and (rest.startswith(": made by ") or rest.startswith(" and was made with no grad_fn")):
        return Note("not_finite", note, about=about)
    return note


def typed_tensor_note(note: str) -> str:
    """A tensor's note as read from a file, as a Note of its kind if the engine wrote it."""
    for start, kind in _TENSOR_STARTS:
        if note.startswith(start):
            return Note(kind, note)
    return note


def joined(note: str | None, more: str) -> str:
    """`more` said after `note` (one tensor's note, "; " between): the kind stays the first's."""
    if not note:
        return more
    text = f"{note}; {more}"
    return Note(note.kind, text, note.about) if isinstance(note, Note) else text
