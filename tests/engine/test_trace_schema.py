"""Trace files are untrusted input: each crafted file is refused with one message naming
the line and the field, quickly and without allocating what the file merely claims; a good
file (and `trace --json` output) loads."""

from __future__ import annotations

import copy
import dataclasses
import json
import tracemalloc

import pytest

import hostile
from finishing import finishes
from hooktui.engine.records import records
from hooktui.engine.records.trace_file import SCHEMA, TraceFileError, read_trace_file, write_header

GOOD_EVENT = {
    "index": 0,
    "phase": "forward",
    "hook": "forward",
    "module": "fc",
    "module_type": "Linear",
    "call": 0,
    "tensors": [
        {
            "name": "output",
            "shape": [2, 3],
            "dtype": "float32",
            "stats": {"count": 6, "finite": 6, "min": 0.0, "max": 5.0, "hist": [3, 3], "hist_range": [0.0, 5.0]},
            "values": [0.0, 1.0, 2.0, 3.0, "nan", "-inf"],
            "values_shape": [2, 3],
        }
    ],
    "node": {"name": "AddmmBackward0", "seq_nr": 3, "next": [None, {"name": "AccumulateGrad"}], "saved": {"mat1": [2, 3], "beta": "1"}},
    "notes": ["a note"],
}
HEADER = {"format": "hooktui-trace", "version": 1, "info": {"model": "m.py", "modules": [{"name": "", "type": "Net"}, {"name": "fc", "type": "Linear"}], "loss": "sum"}}


def write(tmp_path, *events, header=HEADER, name="t.jsonl"):
    path = tmp_path / name
    lines = ([json.dumps(header)] if header is not None else []) + [e if isinstance(e, str) else json.dumps(e) for e in events]
    path.write_text("\n".join(lines) + "\n")
    return path


def changed(**where):
    """GOOD_EVENT with the value at each dotted path replaced."""
    event = copy.deepcopy(GOOD_EVENT)
    for dotted, value in where.items():
        target = event
        parts = dotted.split("__")
        for part in parts[:-1]:
            target = target[int(part)] if part.isdigit() else target[part]
        last = parts[-1]
        target[int(last) if last.isdigit() else last] = value
    return event


def test_a_good_file_loads(tmp_path):
    loaded = read_trace_file(write(tmp_path, GOOD_EVENT))
    (event,) = loaded.events
    tensor = event.tensors[0]
    assert tensor.values[4] != tensor.values[4] and tensor.values[5] == float("-inf")  # "nan", "-inf"
    assert event.node.next[1].name == "AccumulateGrad" and event.node.saved == {"mat1": [2, 3], "beta": "1"}
    assert loaded.info.modules[1].type == "Linear"


BAD_EVENTS = [
    pytest.param(changed(call="3"), "call: expected an integer", id="string-for-int"),
    pytest.param(changed(call=True), "call: expected an integer", id="bool-for-int"),
    pytest.param(changed(index=-1), "index: expected an integer from 0", id="negative"),
    pytest.param(changed(tensors=[None]), "tensors[0]: expected an object", id="tensors-null"),
    pytest.param(changed(notes=[1]), "notes[0]: expected a string", id="notes-int"),
    pytest.param(changed(tensors__0__stats__min="abc"), "tensors[0].stats.min: expected a number", id="string-for-float"),
    pytest.param(changed(tensors__0__stats__hist=[1, "x"]), "tensors[0].stats.hist[1]", id="hist-item"),
    pytest.param(changed(tensors__0__shape=[2, -3]), "tensors[0].shape[1]", id="negative-dim"),
    pytest.param(changed(tensors__0__values_shape=[100000000, 1]), "tensors[0].values_shape: values_shape [100000000, 1] needs", id="values-shape-claims-more"),
    pytest.param(changed(tensors__0__values_shape=None), "values and values_shape come together", id="values-without-shape"),
    pytest.param(changed(hook="bogus"), "hook: expected one of", id="unknown-hook"),
    pytest.param(changed(phase=None), "phase: expected one of", id="null-phase"),
    pytest.param(changed(surprise=1), "unknown field 'surprise'", id="unknown-field"),
    pytest.param({k: v for k, v in GOOD_EVENT.items() if k != "module"}, "missing field 'module'", id="missing-field"),
    pytest.param(changed(module="m" * 5_000), "module: a string of 5000 characters", id="long-name"),
    pytest.param(changed(node__saved__mat1={"a": 1}), "node.saved['mat1']", id="saved-object"),
    pytest.param(changed(tensors__0__values=[1.0] * 70_000, tensors__0__values_shape=[70_000]), "tensors[0].values: 70000 numbers", id="too-many-values"),
    pytest.param([1, 2], "expected an object (Event)", id="array-line"),
]


@pytest.mark.parametrize("event, message", BAD_EVENTS)
def test_a_bad_field_is_named_with_its_line(tmp_path, event, message):
    path = write(tmp_path, GOOD_EVENT, event)
    with pytest.raises(TraceFileError) as caught:
        read_trace_file(path)
    assert str(caught.value).startswith(f"{path}:3: "), caught.value
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def _nested_node(depth: int) -> dict:
    node: dict = {"name": "leaf"}
    for _ in range(depth):
        node = {"name": "n", "next": [node]}
    return node


LINES = [
    pytest.param("[" * 100_000 + "]" * 100_000, "nested too deeply", id="100k-levels"),
    pytest.param(json.dumps(changed(node=_nested_node(40))), "records nested more than 32 levels deep", id="deep-node-tree"),
    pytest.param(json.dumps(GOOD_EVENT).replace('"call": 0', '"call": ' + "9" * 5_000), "an integer of 5000 digits", id="5000-digits"),
    pytest.param('{"index": 0,', "not JSON", id="truncated"),
    # json's message ends with "at": said once, not "at at column 6".
    pytest.param('{"bad\x01', r"not JSON \(Invalid control character at column 6\)$", id="control-character"),
]


@pytest.mark.parametrize("line, message", LINES)
def test_hostile_lines_are_refused(tmp_path, line, message):
    path = write(tmp_path, line)
    with pytest.raises(TraceFileError, match=message) as caught:
        finishes(read_trace_file, path)  # refused, not parsed for ever
    assert str(caught.value).startswith(f"{path}:2: ")


def test_a_huge_claim_allocates_nothing(tmp_path):
    """values_shape [100000000, 1] in a small file: refused before anything that size exists."""
    path = write(tmp_path, *[changed(index=i) for i in range(50)], changed(index=50, tensors__0__values_shape=[100_000_000, 1]))
    tracemalloc.start()
    try:
        with pytest.raises(TraceFileError, match="values_shape"):
            read_trace_file(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20 << 20, f"peak {peak >> 20} MiB"


def test_a_50_mb_string_is_refused_quickly_and_small(tmp_path):
    path = tmp_path / "big.jsonl"
    with open(path, "w") as out:
        out.write(json.dumps(HEADER) + "\n")
        out.write('{"index": 0, "phase": "forward", "hook": "forward", "module": "m", "module_type": "M", "call": 0, "tensors": [{"name": "')
        out.write("x" * (50 << 20))
        out.write('", "shape": [1]}]}\n')
    tracemalloc.start()
    try:
        with pytest.raises(TraceFileError, match=r":2: line longer than 8 MiB"):
            finishes(read_trace_file, path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 40 << 20, f"peak {peak >> 20} MiB"


@pytest.mark.parametrize(
    "header, message",
    [
        pytest.param({**HEADER, "info": {**HEADER["info"], "modules": [None]}}, "header: info.modules[0]: expected an object", id="module-null"),
        pytest.param({**HEADER, "info": {**HEADER["info"], "loss": 3}}, "header: info.loss: expected a string", id="loss-int"),
        pytest.param({**HEADER, "sources": {"m.py": {"x": "code"}}}, "header: sources['m.py']['x']: expected a line number", id="source-key"),
        pytest.param({**HEADER, "sources": {"m.py": {"3": 7}}}, "header: sources['m.py']['3']: expected a string", id="source-line"),
        pytest.param({**HEADER, "extra": 1}, "header: unknown field 'extra'", id="header-extra"),
    ],
)
def test_a_bad_header_is_refused(tmp_path, header, message):
    path = write(tmp_path, GOOD_EVENT, header=header)
    with pytest.raises(TraceFileError, match=message.replace("[", r"\[").replace("(", r"\(")):
        read_trace_file(path)


@pytest.mark.parametrize("target, message", [("/dev/zero", "not a regular file"), ("/dev/tty", "not a regular file"), (".", "is a folder")])
def test_only_regular_files_are_read(target, message):
    with pytest.raises(TraceFileError, match=message):
        read_trace_file(target)


def test_not_utf8_is_refused(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(json.dumps(HEADER).encode() + b"\n\xff\xfe{}\n")
    with pytest.raises(TraceFileError, match=":2: not UTF-8"):
        read_trace_file(path)


def test_json_output_without_a_header_opens(tmp_path):
    """`hooktui trace --json > run.jsonl` holds the same records: view accepts it."""
    second = changed(index=1, module="fc.inner", module_type="Inner")
    loaded = read_trace_file(write(tmp_path, GOOD_EVENT, second, header=None))
    assert loaded.headerless and [e.index for e in loaded.events] == [0, 1]
    assert [(m.name, m.type) for m in loaded.info.modules] == [("", "?"), ("fc", "Linear"), ("fc.inner", "Inner")]
    assert "no header" in loaded.info.loss


def test_the_hostile_trace_loads_as_it_is(tmp_path):
    """Control characters and markup are legal text: the file loads, the UI shows them safely."""
    loaded = read_trace_file(hostile.write(tmp_path / "evil.jsonl"))
    assert hostile.TITLE in loaded.events[0].module
    assert loaded.sources["model_evil.py"][3].endswith(hostile.EVIL)


def test_every_record_field_has_a_schema_entry():
    """Adding a field to a record needs one line in its struct of trace_file.SCHEMA; this says which."""
    for cls in (records.Event, records.TensorRecord, records.TensorStats, records.NodeRecord, records.SourceLocation,
                records.ErrorRecord, records.ModuleInfo, records.TraceInfo):
        missing = {f.name for f in dataclasses.fields(cls)} - set(SCHEMA[cls].__struct_fields__)
        assert not missing, f"trace_file.SCHEMA[{cls.__name__}] has no check for {sorted(missing)}"


def test_header_writer_and_reader_agree(tmp_path):
    info = records.TraceInfo(model="m.py", modules=[records.ModuleInfo("", "Net")], loss="sum")
    path = tmp_path / "t.jsonl"
    with open(path, "w") as out:
        write_header(out, info, {"m.py": {3: "y = f(x)", 4: ""}})
    loaded = read_trace_file(path)
    assert loaded.info == info and loaded.sources == {"m.py": {3: "y = f(x)", 4: ""}} and loaded.events == []


# -- issue 24 ---------------------------------------------------------------------------
@pytest.mark.parametrize("version", [True, 1.0, "1"], ids=["true", "1.0", "string"])
def test_a_version_that_only_equals_1_is_refused(tmp_path, version):
    with pytest.raises(TraceFileError, match="trace format version"):
        read_trace_file(write(tmp_path, GOOD_EVENT, header={**HEADER, "version": version}))


def test_a_values_block_larger_than_its_tensor_is_refused(tmp_path):
    """A claimed size is bounded by another before anything is built from it: the block is
    t[:k0, :k1], never larger than the tensor (values [] of values_shape [2**63-1, 0])."""
    event = changed(tensors__0__values=[], tensors__0__values_shape=[2**63 - 1, 0])
    with pytest.raises(TraceFileError, match=r"tensors\[0\]\.values_shape: values_shape .* is not a leading block of shape"):
        read_trace_file(write(tmp_path, event))


def test_trace_json_with_its_stopped_record_reads_back(tmp_path):
    """`trace --json --stop-at-nonfinite > s.jsonl` ends with {"stopped": ...}: view and
    diff read it (the firing it names becomes where the app opens)."""
    stopped = {"stopped": {"index": 0, "breakpoint": "nonfinite", "reason": "NaN in output", "born": {"seen": 0, "lines": ["x"]}}}
    loaded = read_trace_file(write(tmp_path, GOOD_EVENT, stopped, header=None))
    assert loaded.headerless and len(loaded.events) == 1 and loaded.info.stopped_at == 0


@pytest.mark.parametrize(
    "record, message",
    [
        ({"stopped": {"index": "zero"}}, "stopped.index: expected an integer"),
        ({"stopped": {"index": 0, "evil": 1}}, "stopped: unknown field 'evil' for stopped"),
        ({"stopped": {"index": 0}, "more": 1}, "stopped: unknown field 'more' beside stopped"),
        ({"stopped": {}}, "stopped: missing field 'index' of stopped"),
        ({"stopped": []}, "stopped: expected an object"),
    ],
)
def test_a_bad_stopped_record_is_one_message(tmp_path, record, message):
    with pytest.raises(TraceFileError, match=f":2: {message}"):
        read_trace_file(write(tmp_path, GOOD_EVENT, record, header=None))


def test_a_firing_after_the_stopped_record_is_refused(tmp_path):
    with pytest.raises(TraceFileError, match=":3: a firing after"):
        read_trace_file(write(tmp_path, GOOD_EVENT, {"stopped": {"index": 0}}, GOOD_EVENT, header=None))


# -- issue 26: the header's rank -------------------------------------------------------------
def _ranked(**fields):
    return {**HEADER, "info": {**HEADER["info"], **fields}}


def test_a_header_with_a_rank_loads_and_one_without_still_does(tmp_path):
    loaded = read_trace_file(write(tmp_path, GOOD_EVENT, header=_ranked(rank=2, world_size=3)))
    assert (loaded.info.rank, loaded.info.world_size) == (2, 3)
    assert loaded.info.rank_text() == "rank 2 of 3"
    assert read_trace_file(write(tmp_path, GOOD_EVENT, header=_ranked(rank=5))).info.rank_text() == "rank 5"
    old = read_trace_file(write(tmp_path, GOOD_EVENT))  # HEADER has neither field: as files written before
    assert (old.info.rank, old.info.world_size, old.info.rank_text()) == (None, None, None)


@pytest.mark.parametrize(
    "fields, message",
    [
        pytest.param({"rank": "0"}, "header: info.rank: expected an integer from 0 to 2147483647, got the string '0'", id="string"),
        pytest.param({"rank": -1, "world_size": 2}, "header: info.rank: expected an integer from 0", id="negative"),
        pytest.param({"rank": True}, "header: info.rank: expected an integer", id="bool"),
        pytest.param({"rank": 1.0}, "header: info.rank: expected an integer", id="float"),
        pytest.param({"rank": 2**40}, "header: info.rank: expected an integer from 0 to 2147483647", id="huge"),
        pytest.param({"rank": 0, "world_size": 0}, "header: info.world_size: expected an integer from 1", id="world-0"),
        pytest.param({"rank": 3, "world_size": 2}, "header: info.rank: rank 3 of a world of 2: ranks run from 0 to 1", id="rank-beyond"),
        pytest.param({"world_size": 2}, "header: info.world_size: world_size without a rank", id="world-alone"),
    ],
)
def test_a_bad_rank_in_the_header_is_one_message(tmp_path, fields, message):
    path = write(tmp_path, GOOD_EVENT, header=_ranked(**fields))
    with pytest.raises(TraceFileError) as caught:
        read_trace_file(path)
    assert str(caught.value).startswith(f"{path}:1: {message}") and "\n" not in str(caught.value), caught.value


def test_a_single_process_header_carries_no_rank_fields():
    """Written as before ranks were recorded, so an older hooktui still reads it."""
    info = records.TraceInfo(model="m.py", modules=[], loss="sum")
    assert "rank" not in info.to_dict() and "world_size" not in info.to_dict()
    ranked = records.TraceInfo(model="m.py", modules=[], loss="sum", rank=1, world_size=2)
    assert (ranked.to_dict()["rank"], ranked.to_dict()["world_size"]) == (1, 2)


# -- issue 30: notes with kinds, one list of hook kinds ----------------------------------------
def test_the_engines_sentences_in_a_file_get_their_kinds_back(tmp_path):
    """A trace file holds notes as text (files written before notes had kinds too): the
    sentences the engine writes are read back as Notes of their kinds, once, here; any
    other text stays a plain note."""
    from hooktui.engine.records.notes import Note, kind_of
    from hooktui.engine.records.trace_file import write_trace

    event = changed(notes=[
        "made outside every module call (in the loss, or between the calls of the root module)",
        "created in forward at m.py:3",
        "output is not finite: made by SqrtBackward0 at m.py:4",
        "DDP: this rank's gradient, before DDP averages it over the 2 ranks",
        "a note",
    ], tensors__0__note="the .grad this parameter already held when the backward started (not zeroed since?): x")
    (read,) = read_trace_file(write(tmp_path, event)).events
    assert [kind_of(n) for n in read.notes] == ["made_outside", "created_at", "not_finite", "grad_kind", "plain"]
    assert read.notes[2].about == "output" and read.notes == event["notes"]  # the text is as it was
    assert kind_of(read.tensors[0].note) == "held_grad"
    # Written back, a Note is its text: the file reads the same.
    path = tmp_path / "again.jsonl"
    write_trace(path, records.TraceInfo(model="m.py", modules=[], loss="sum"), [read])
    (again,) = read_trace_file(path).events
    assert again == read and [kind_of(n) for n in again.notes] == [kind_of(n) for n in read.notes]
    assert isinstance(again.notes[0], Note) and copy.deepcopy(again.notes[0]).kind == "made_outside"


def test_there_is_one_list_of_hook_kinds():
    from hooktui.engine.records import firing, trace_file

    assert records.HOOK_KINDS is firing.HOOK_KINDS and trace_file.HOOKS is firing.HOOK_KINDS
