"""The console at a paused firing (`:` in the app): a Python expression evaluated against
the firing, with the names a breakpoint condition sees (engine/analysis/breakpoints.py). A statement
(`x = grad_output[0]`, `import math`) runs too; the names it binds are kept in `names` (the
app's, for its lifetime, as pdb keeps them) and seen by later lines at any firing.

Live, the names are the live objects (`grad_output[0]` is the tensor itself); in a
recorded trace only `event` and `tensors` (the records by name) exist, and a name that
needs the model says so. A live run also offers its own names at every firing, past ones and
after the run too, as pdb's post-mortem does: `model`, `loss`, `output`, `grads`. A tensor result is summarised like a tensor of a firing (the
Tensors pane's one line, its values for the Values grid); anything else is its repr,
cut to a line. An exception is one line; nothing it raises escapes.

What the line prints (`print(x.shape)`, a `for` loop of prints) is the console's, as in pdb
and a REPL: sys.stdout and sys.stderr are taken for the time it runs (the model is paused),
and the text is shown above the result; an expression whose value is None (print's) shows
only its output.
"""

from __future__ import annotations

import contextlib
import io
import reprlib
from dataclasses import dataclass
from typing import Any

from ..records.format import shape_text, stats_line
from ..records.records import Event, TensorRecord
from .breakpoints import CONDITION_NAMES, condition_scope

_REPR = reprlib.Repr()
_REPR.maxstring = 200
_REPR.maxother = 200


@dataclass
class ConsoleResult:
    expression: str
    text: str  # one line: the repr, the summary of a tensor, or the error
    ok: bool = True
    tensor: TensorRecord | None = None  # a tensor result, summarised like a firing's
    output: str = ""  # what it printed, at most OUTPUT_LIMIT characters (the end cut)


OUTPUT_LIMIT = 20_000


class _Printed(io.StringIO):
    """What the line prints, kept up to OUTPUT_LIMIT (a print in a loop of a million)."""

    def write(self, text: str) -> int:
        room = OUTPUT_LIMIT + 1 - self.tell()
        if room > 0:
            super().write(text[:room])
        return len(text)


def evaluate(expression: str, event: Event, live: Any = None, names: dict | None = None, *,
             run_names: dict | None = None, past: bool = False) -> ConsoleResult:
    """`run_names`: what a live run offers at every firing (`model`, and after the run `loss`,
    `output`, `grads`: ui/sources.py); the firing's own names win over them. `past`: `event`
    is a past firing of a live run (its live objects are gone), not a recorded trace's."""
    printed = _Printed()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        result = _evaluate(expression, event, live, names, run_names or {}, past)
    output = printed.getvalue()
    if len(output) > OUTPUT_LIMIT:
        output = output[:OUTPUT_LIMIT] + "\n… (output cut)"
    result.output = output
    if output and result.ok and result.text in ("None", "ok") and result.tensor is None:
        result.text = ""  # print(...) is None, a statement says ok: the output says it
    return result


def _evaluate(expression: str, event: Event, live: Any, names: dict | None, run_names: dict, past: bool) -> ConsoleResult:
    expression = expression.strip()
    scope = {**run_names, **condition_scope(event, live)}
    namespace = {"__builtins__": __builtins__, **(names or {}), **scope}
    try:
        try:
            code = compile(expression, "<console>", "eval")
        except SyntaxError:
            code = compile(expression, "<console>", "exec")  # a statement; its own error if not one
            exec(code, namespace)
            if names is not None:  # what it bound, less the firing's own names
                names.update((k, v) for k, v in namespace.items() if k not in scope and k != "__builtins__")
            return ConsoleResult(expression, "ok")
        value = eval(code, namespace)
    except NameError as exc:
        name = getattr(exc, "name", None)
        if live is None and name in CONDITION_NAMES:
            here = ", ".join(["event", "tensors", *run_names])
            if past:
                why = (f"{name} is not available at a past firing: only the firing the model is paused at has its live "
                       f"objects (names here: {here})")
            else:
                why = f"{name} is not available here: a recorded trace has no live objects (names here: {here})"
            return ConsoleResult(expression, why, ok=False)
        return ConsoleResult(expression, f"NameError: {exc}", ok=False)
    except SyntaxError as exc:
        return ConsoleResult(expression, f"SyntaxError: {exc.msg}", ok=False)
    except Exception as exc:  # the user's expression: one line, the app goes on
        return ConsoleResult(expression, f"{type(exc).__name__}: {exc}", ok=False)
    try:
        return _result(expression, value)
    except Exception as exc:  # the value's own __repr__ (or a tensor that cannot be summarised) raised
        return ConsoleResult(expression, f"{type(exc).__name__} showing the result: {exc}", ok=False)


def is_torch_tensor(value: Any) -> bool:
    """A torch Tensor or Parameter, told by its class's name, without importing torch (a
    recorded trace's console has none). A class made by type() in an expression has no
    `__module__` (its namespace has no `__name__`), and a class may set it to anything."""
    kind = type(value)
    module = getattr(kind, "__module__", None)
    return isinstance(module, str) and module.startswith("torch") and kind.__name__ in ("Tensor", "Parameter")


def _result(expression: str, value: Any) -> ConsoleResult:
    if isinstance(value, TensorRecord):
        return ConsoleResult(expression, _summary(value), tensor=value)
    if is_torch_tensor(value):
        from ..summaries import stats

        record = stats.describe(expression, value.detach())
        return ConsoleResult(expression, _summary(record), tensor=record)
    text = _REPR.repr(value).replace("\n", " ")
    return ConsoleResult(expression, text)


def _summary(record: TensorRecord) -> str:
    return f"{shape_text(record)} {record.dtype or ''} {stats_line(record)}".replace("  ", " ")
