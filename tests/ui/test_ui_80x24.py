"""What must stay on screen at 80x24 (issue 25.4): tensor shapes and statistics beside long
labels, whole column titles, the timeline's shape column, tree names without cut words."""

from __future__ import annotations

import copy

from hooktui.ui.app import HooktuiApp
from hooktui.ui.widgets.tensors import fit_columns

from screen_text import screen_rows
from ui_helpers import recorded, run

LONG = "the module's input args[0]"  # a node firing's label: `grad_inputs[1] → the module's input args[0]`


def test_the_label_gives_way_to_the_statistics_and_the_histogram_shows_only_whole():
    columns = ["tensor", "shape", "stats", "histogram"]
    assert fit_columns(columns, [44, 15, 40, 16], 200, 16) == (columns, [44, 15, 40, 16])  # room: nothing changes
    # The label is cut as far as the statistics need (79 = 18 + 15 + 40 + 3 columns' padding), no further.
    assert fit_columns(columns, [44, 15, 40, 16], 79, 16) == (columns[:3], [18, 15, 40])
    assert fit_columns(columns, [44, 15, 50, 16], 79, 16) == (columns[:3], [16, 15, 50])  # not below its floor
    # The histogram: only whole, and not at the label's expense.
    assert fit_columns(columns, [20, 9, 30, 16], 79, 16) == (columns[:3], [20, 9, 30])
    assert fit_columns(columns, [10, 9, 30, 16], 79, 16) == (columns, [10, 9, 30, 16])
    assert fit_columns([*columns, "dtype"], [10, 9, 30, 16, 8], 79, 16) == ([*columns[:3], "dtype"], [10, 9, 30, 8])


def test_a_long_label_leaves_the_shape_and_statistics_on_screen_and_the_values_title_says_it_whole():
    info, events = recorded("cnn.py")
    position = next(i for i, e in enumerate(events) if e.hook == "backward" and e.module == "features.4")
    event = events[position]
    for tensor in event.tensors:  # labelled as a node firing's are (long)
        tensor.target = LONG
    shape = f"({', '.join(map(str, event.tensors[0].shape))})"

    async def script():
        app = HooktuiApp(recorded=(info, events), show_timings=False)
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            app.goto(position, follow=False)
            await pilot.pause()
            rows = screen_rows(app)
            row = next(r for r in rows if r.startswith(f" {event.tensors[0].name} …"))
            assert shape in row and "x∈[" in row and "σ=" in row, rows
            assert not any("histogr" in r and "histogram" not in r for r in rows), rows  # no column title cut
            await pilot.press("v")
            await pilot.pause()
            title = " ".join(screen_rows(app))
            assert f"{event.tensors[0].name} → {LONG}" in title, title

    run(script())


def _screen_of(name: str, position: int = 0) -> list[str]:
    info, events = recorded(name)
    out: list[list[str]] = []

    async def script():
        app = HooktuiApp(recorded=(info, events), show_timings=False)
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            app.goto(position, follow=False)
            await pilot.pause()
            out.append(screen_rows(app))

    run(script())
    return out[0]


def test_the_timeline_keeps_its_shape_column_for_long_module_names():
    for name in ("transformer.py", "nan_hunt.py"):
        rows = _screen_of(name, 12)
        header = next(r for r in rows if " hook " in r and "module" in r)
        assert "shape" in header, (name, rows)
        assert "(2, " in " ".join(rows), (name, rows)  # the shapes themselves (batch of 2)


def test_tree_types_are_whole_words_or_left_out():
    rows = _screen_of("transformer.py")
    tree = [r[:24] for r in rows[1:10]]
    assert any(" attn " in r for r in tree) and any(" mlp" in r for r in tree), tree
    assert not any("Multihe…" in r or "Sequenti…" in r or "Non…" in r for r in tree), tree


def test_the_tabs_take_the_rows_the_tensors_need_and_the_tree_and_timeline_the_rest():
    info, events = recorded("cnn.py")
    many = next(i for i, e in enumerate(events) if e.hook == "backward" and e.module == "head")
    events[many].tensors = [copy.copy(events[many].tensors[0]) for _ in range(8)]
    for k, tensor in enumerate(events[many].tensors):
        tensor.name = f"t{k}"

    async def script():
        app = HooktuiApp(recorded=(info, events), show_timings=False)
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            await pilot.pause()
            top, lower = app.query_one("#top"), app.lower
            # 22 rows between the status line and the footer: 1 tensor needs the least (8).
            assert (top.size.height, lower.size.height) == (14, 8)
            app.goto(many, follow=False)
            await pilot.pause()
            assert lower.size.height == 2 + 1 + 1 + 8  # tabs, summary, header, 8 tensors
            rows = screen_rows(app)
            assert " t7 " in rows[1 + top.size.height + lower.size.height - 1], rows  # the last on screen
            await pilot.press("x")  # Explain's text fills what it gets: the tabs' share (60%)
            await pilot.pause()
            assert lower.size.height == 13
            await pilot.press("t")
            await pilot.pause()
            assert lower.size.height == 12
            await pilot.resize_terminal(120, 40)  # side by side: the CSS's split
            await pilot.pause()
            assert lower.wide and str(lower.styles.height) == "1fr" and top.size.height == 15  # 40%, as before

    run(script())


def test_no_binding_shows_through_beside_the_palette_key_at_60x18():
    info, events = recorded("seed.py")

    async def script():
        app = HooktuiApp(recorded=(info, events), show_timings=False)
        async with app.run_test(size=(60, 18), notifications=False) as pilot:
            await pilot.pause()
            footer = screen_rows(app)[-1]
            assert footer.endswith("^p palette "), footer  # was `^p paletteu`: Quit's 'u'
            await pilot.resize_terminal(80, 24)
            await pilot.pause()
            footer = screen_rows(app)[-1]
            assert "q Quit" in footer and footer.endswith("^p palette "), footer

    run(script())


def test_notes_longer_than_their_rows_end_saying_so():
    """A guard's note ("hooktui.guard stopped here. Where it was born: ...") was cut
    mid-sentence by the notes' height, with nothing to tell it was (issue 25.6)."""
    from hooktui.engine.records.records import Event, ModuleInfo, TensorRecord, TraceInfo

    info = TraceInfo(model="Synthetic", modules=[ModuleInfo("", "Net")], loss="none")
    notes = ["the first note, which is short", "w" * 150 + " the end of a long sentence", "a third note"]
    event = Event(index=0, phase="forward", hook="forward", module="", module_type="Net", call=0,
                  tensors=[TensorRecord(name="output", shape=[2], dtype="float32", device="cpu")], notes=notes)
    app = HooktuiApp(recorded=(info, [event]))

    async def script():
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            await pilot.pause()
            await pilot.press("t")
            await pilot.pause()
            rows = screen_rows(app)
            said = [r for r in rows if "more lines: x shows every note" in r]
            assert len(said) == 1 and said[0].strip().startswith("…")
            assert not any("a third note" in r for r in rows)  # it is among the lines left out

    run(script())
