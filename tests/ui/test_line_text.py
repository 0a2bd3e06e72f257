"""The one-line texts a step changes (the status line, the notes line, the values pane's
title), drawn from the Rich Text's spans without Textual's Content pipeline (issue 33, key
to screen: `ui/widgets/line_text.py`), draw what Textual's own Widget and Static draw for the
same text: compared segment by segment, each segment's text, style and meta (the offsets
Textual puts there for text selection), as the widget's line and as painted (padding,
background, the line filters that make `dim` a colour), at several widths (a text cut to
fit, a search part cut, a stop's reason cut, NaN and Inf flags, an empty text, a text as
wide as the line), after a resize and after a theme change."""

from __future__ import annotations

from rich.style import Style as RichStyle
from rich.text import Text
from textual.app import App
from textual.geometry import Region
from textual.widget import Widget
from textual.widgets import Static

from hooktui.engine.analysis.breakpoints import Breakpoint, Stop
from hooktui.ui.widgets.line_text import LineStatic
from hooktui.ui.widgets.status import StatusInfo, StatusLine, status_text
from hooktui.ui.widgets.timeline import nonfinite

from ui_helpers import recorded, run

WIDTHS = (12, 47, 80, 200)  # the terminal's: the status line cut more or less, the Statics' texts wrapped or not


class StockStatusLine(StatusLine):
    """The status line as Textual draws it: its Rich Text through the Content pipeline."""

    render_line = Widget.render_line


class Pair(App):
    """Each widget beside its stock twin, with the same CSS: the status line's own, and two
    Statics' (the values title's padding and muted colour; a background and text-style)."""

    CSS = """
    Screen { overflow: hidden; }  /* no scrollbar taking columns when a wrapped text is tall */
    .muted { padding: 0 1; color: $text-muted; }
    .styled { background: $boost; text-style: bold underline; padding: 0 2; }
    """

    def compose(self):
        yield StatusLine(id="line-status")
        yield StockStatusLine(id="stock-status")
        for kind in ("muted", "styled"):
            yield LineStatic(id=f"line-{kind}", classes=kind)
            yield Static(id=f"stock-{kind}", classes=kind)


def _segments(strips) -> list[list[tuple]]:
    """What a strip holds, its segments' styles spelled out (a Style's == is its hash)."""
    return [[(s.text, str(s.style), s.style.meta if s.style else None, s.control) for s in strip] for strip in strips]


def _painted(widget: Widget) -> list[list[tuple]]:
    widget._styles_cache.clear()  # painted again, not handed back from Textual's line cache
    return _segments(widget.render_lines(Region(0, 0, *widget.size)))


def _same(app: Pair, name: str, fast: bool) -> None:
    """The widget and its stock twin draw the same line and paint the same lines; `fast`:
    the line was made by LineStrips (not handed to Textual's pipeline)."""
    line, stock = app.query_one(f"#line-{name}"), app.query_one(f"#stock-{name}")
    assert line.size == stock.size
    text = line.content if isinstance(line, Static) else line.render()
    made = line._line_strips.strip(line, text, line.size.width)
    assert (made is not None) == fast, (name, text)
    if made is not None:
        assert _segments([made]) == _segments([Widget.render_line(stock, 0)]), (name, text, line.size)
    for y in range(line.size.height):
        assert _segments([line.render_line(y)]) == _segments([Widget.render_line(stock, y)]), (name, text, y)
    assert _painted(line) == _painted(stock), (name, text, line.size)


def _status_infos() -> list[StatusInfo | None]:
    info, events = recorded("nan.py")
    nan = next(e for e in events if nonfinite(e) == "NaN")
    inf = next(e for e in events if nonfinite(e) == "Inf")
    plain = next(e for e in events if e.hook == "backward_pre" and not nonfinite(e))
    expression = "grad_output[0].norm() / (grad_output[0].numel() ** 0.5) > 1e-3 and module.training"
    return [
        None,  # before any firing: an empty text
        StatusInfo("paused", nan, 10, 40, True, loss="loss_fn(output) from a_long_model_file_name.py",
                   summary="12 forward + 20 backward firings, 9 modules", wall_time=0.52, breakpoints=("encoder",)),
        StatusInfo("paused", plain, 3, 40, False, loss="sum", stop=Stop(plain.index, Breakpoint.condition(expression), "true"),
                   search=("grad_output_with_a_long_query", "3/17")),
        StatusInfo("failed", inf, 39, 40, False, loss="nan", against="rank 0 vs rank 1", value_breakpoints=("non-finite",)),
        StatusInfo("running", None, 0, 0, True, loss="", search=("kind", "0/0")),
    ]


def _static_texts(width: int) -> list[tuple[Text, bool]]:
    """Texts for the Statics, and whether each is one line that fits (drawn by LineStrips)
    at `width` cells of content."""
    one_line = [
        Text(""),
        Text("grad_input[0] [4, 8]: no values kept"),
        Text("output: None (not kept)", style="yellow"),
        Text.assemble(("output[0]", "bold"), " [4, 8] float32 ", ("NaN!", "bold white on red"), ("  9 of 32 shown", "dim")),
        Text("[bold]not markup[/] 形状", style=RichStyle(italic=True, color="bright_cyan")),
        Text.assemble(("NaN!", "bold red"), " in grad_output[0]", style="yellow"),  # its spans over its own style
        Text.assemble(("a link", RichStyle(link="https://example.com")), " after it"),
        Text("x" * (width - 2) + "形", style="yellow"),  # as wide as the line
        Text("an \x1b[31mescape"),  # drawn as Textual draws it (hooktui's visible() escapes record text before)
    ]
    return [
        *((text, text.cell_len <= width) for text in one_line),  # wider: wrapped by Content
        (Text("x" * (width + 1)), False),
        (Text("two\nlines", style="dim"), False),
        (Text.from_markup("[@click=app.bell]click me[/]"), False),  # Textual restyles `@click`
    ]


async def _check_all(pilot, app: Pair, infos: list[StatusInfo | None], widths=WIDTHS) -> None:
    for width in widths:
        await pilot.resize_terminal(width, 24)
        await pilot.pause()
        for info in infos:
            for name in ("line-status", "stock-status"):
                app.query_one(f"#{name}", StatusLine).show(info)
            await pilot.pause()
            _same(app, "status", fast=True)
        for kind in ("muted", "styled"):
            content_width = app.query_one(f"#line-{kind}").size.width
            for text, fast in _static_texts(content_width):
                app.query_one(f"#line-{kind}", LineStatic).update(text)
                app.query_one(f"#stock-{kind}", Static).update(text)
                await pilot.pause()
                _same(app, kind, fast)


def test_one_line_texts_draw_what_textual_draws_at_every_width_after_a_resize_and_a_theme_change():
    infos = _status_infos()

    async def go():
        app = Pair()
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            await _check_all(pilot, app, infos)
            # The same text kept across resizes: the line made again at the new width, and
            # a Static's text that no longer fits handed to Textual (which wraps it).
            for name in ("line-status", "stock-status"):
                app.query_one(f"#{name}", StatusLine).show(infos[1])
            long = Text.assemble(("grad_output[0]", "bold"), " [4, 8]: 32 values, 9 NaN, rows 0-3 of 4")
            assert 40 < long.cell_len < 60
            for kind in ("muted", "styled"):
                app.query_one(f"#line-{kind}", LineStatic).update(long)
                app.query_one(f"#stock-{kind}", Static).update(long)
            for width in (120, 64, 40, 120):
                await pilot.resize_terminal(width, 24)
                await pilot.pause()
                _same(app, "status", fast=True)
                for kind in ("muted", "styled"):
                    _same(app, kind, fast=long.cell_len <= app.query_one(f"#line-{kind}").size.width)
            # A theme change restyles every text (and `dim`, made a colour, changes too).
            before = _painted(app.query_one("#line-status"))
            app.theme = "textual-light"
            await pilot.pause()
            _same(app, "status", fast=True)
            assert _painted(app.query_one("#line-status")) != before
            await _check_all(pilot, app, infos, widths=(30, 120))

    run(go())


def test_the_status_line_s_text_is_the_fitted_status_text():
    """What StatusLine draws is status_text at its width (the fitted text kept per info and
    width is dropped when either changes)."""
    infos = _status_infos()

    async def go():
        app = Pair()
        async with app.run_test(size=(80, 24), notifications=False) as pilot:
            line = app.query_one("#line-status", StatusLine)
            for width in (40, 90):
                await pilot.resize_terminal(width, 24)
                await pilot.pause()
                for info in infos[1:]:
                    line.show(info)
                    await pilot.pause()
                    drawn = "".join(s.text for s in line.render_line(0))
                    assert drawn == status_text(info, width).plain

    run(go())
