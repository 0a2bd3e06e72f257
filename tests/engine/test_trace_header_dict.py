"""A trace file's header (`TraceInfo.to_dict`) is what `dataclasses.asdict` makes of it, key
for key and in the same order, less the keys an older file did not have (rank and world size
of a single process, a stop's sub-number 0); it is made without asdict's deep copies, which
took ~7 s for a 200,000-module model (docs/benchmarks.md)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from hooktui.engine.records.records import ModuleInfo, TraceInfo
from hooktui.engine.records.trace_file import read_trace, write_trace


def _modules() -> list[ModuleInfo]:
    return [
        ModuleInfo(name="", type="Net", params={}),
        ModuleInfo(name="fc", type="Linear", params={"weight": [3, 4], "bias": [3]}),
        ModuleInfo(name="head", type="Linear", params={"weight": (2, 3)}, raw_name="_orig_mod.head"),
        ModuleInfo(name="empty", type="Identity"),
    ]


def _expected(info: TraceInfo) -> dict:
    data = dataclasses.asdict(info)  # the standard library's, not hooktui's
    for name in ("rank", "world_size"):
        if data[name] is None:
            del data[name]
    if not data["stopped_sub"]:
        del data["stopped_sub"]
    return data


@pytest.mark.parametrize("extra", [
    {},
    {"rank": 1, "world_size": 2, "stopped_at": 7, "stopped_sub": 1},
    {"rank": 0, "stopped_at": 3},
], ids=["single", "ranked-stop", "rank-without-world"])
def test_the_header_is_what_asdict_makes_of_it(extra):
    info = TraceInfo(model="Net", modules=_modules(), loss="sum", device="cpu", torch_version="2.x", **extra)
    header = info.to_dict()
    expected = _expected(info)
    assert header == expected
    assert list(header) == list(expected)
    assert [list(m) for m in header["modules"]] == [list(m) for m in expected["modules"]]
    # New containers, as asdict's: changing the header leaves the records as they were.
    header["modules"][1]["params"]["weight"].append(9)
    header["modules"][1]["params"]["extra"] = [1]
    assert info.modules[1].params == {"weight": [3, 4], "bias": [3]}
    assert json.loads(json.dumps(info.to_dict())) == json.loads(json.dumps(_expected(info)))


def test_a_header_read_back_from_a_file_is_the_one_written(tmp_path):
    info = TraceInfo(model="Net", modules=_modules(), loss="sum", rank=1, world_size=2, stopped_at=0)
    path = tmp_path / "t.json"
    write_trace(path, info, [])
    back, _events = read_trace(path)
    assert back.to_dict() == json.loads(json.dumps(_expected(info)))
