"""The tensors pane's table stays on Textual's public API (issue 30, item 5).

The table (then PaneTable, a DataTable) once overrode four of DataTable's private methods,
copied from Textual 8.x: a Textual release could change them and break the table without a
word. These tests fail if tensor_table.py (TensorTable, which replaced it) defines or
touches a `_`-prefixed name of a Textual class: its classes must not define one that a
Textual base class has (an override, or an attribute shadowing Textual's), and its source
must touch no `_name` that it does not define itself (a call to DataTable's private
methods, `super()._name`, `getattr(obj, "_name")`).
"""

from __future__ import annotations

import ast
import inspect
from types import ModuleType

import pytest

from hooktui.ui.widgets import line_cells, tensor_table

MODULES = [tensor_table, line_cells]  # a module that replaces tensor_table.py goes here


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _own_classes(module: ModuleType) -> list[type]:
    return [c for c in vars(module).values() if isinstance(c, type) and c.__module__ == module.__name__]


def _textual_bases(cls: type) -> list[type]:
    return [base for base in cls.__mro__[1:] if base.__module__.split(".")[0] == "textual"]


def _textual_names(cls: type) -> set[str]:
    """The `_` names of cls's Textual base classes: their class attributes, and the
    attributes a stock instance of the nearest one sets on itself."""
    bases = _textual_bases(cls)
    names = {name for base in bases for name in vars(base) if _private(name)}
    for base in bases:
        try:
            names |= {name for name in vars(base()) if _private(name)}  # the nearest that builds without arguments
            break
        except Exception:
            continue
    return names


def _class_body_names(tree: ast.AST) -> dict[str, set[str]]:
    """The names each class statement of the source defines in its body (methods,
    attributes): what the source itself puts in the class, not what Textual's metaclass
    adds to every widget class (`_css_type_name`, `_decorated_handlers`...)."""
    out: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            names = out.setdefault(node.name, set())
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    names.add(item.name)
                elif isinstance(item, ast.Assign):
                    names |= {t.id for t in item.targets if isinstance(t, ast.Name)}
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    names.add(item.target.id)
    return out


def _assigned_to_self(tree: ast.AST) -> set[str]:
    return {node.attr for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name) and node.value.id == "self"}


def _hooktui_base_names(classes: list[type]) -> set[str]:
    """The names hooktui's own base classes (a mixin such as line_cells.KeptPaintStyles,
    itself checked here) define: the module's own, as far as Textual is concerned."""
    return {name for cls in classes for base in cls.__mro__[1:] if base.__module__.startswith("hooktui.")
            for name in vars(base)}


def private_uses(module: ModuleType, source: str | None = None) -> list[str]:
    """What in `module` (its source: `source`) defines or touches a private name of
    Textual (empty: nothing)."""
    found = []
    tree = ast.parse(source if source is not None else inspect.getsource(module))
    classes = _own_classes(module)
    bodies = _class_body_names(tree)
    own = set(vars(module)) | set().union(*bodies.values()) | _assigned_to_self(tree) | _hooktui_base_names(classes)
    textual = set().union(*(_textual_names(cls) for cls in classes)) if classes else set()
    for cls in classes:
        for name in sorted(bodies.get(cls.__name__, ())):
            if _private(name) and name in textual:
                found.append(f"{cls.__name__}.{name} overrides Textual's")
        for name in sorted(_hooktui_base_names([cls])):  # what a hooktui mixin brings in
            if _private(name) and name in textual:
                found.append(f"{cls.__name__}.{name} (from a hooktui base) overrides Textual's")
    for name in sorted(_assigned_to_self(tree)):
        if _private(name) and name in textual:
            found.append(f"self.{name} is Textual's")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr) and (node.attr not in own or node.attr in textual):
            found.append(f"line {node.lineno}: .{node.attr}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "setattr", "hasattr", "delattr") and len(node.args) > 1
              and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
              and _private(node.args[1].value) and node.args[1].value not in own - textual):
            found.append(f"line {node.lineno}: {node.func.id}(…, {node.args[1].value!r})")
    return found


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_the_table_uses_no_private_name_of_textual(module):
    assert _own_classes(module), "the table's class is gone from this module: point MODULES at its new home"
    assert private_uses(module) == []


BAD = """
from textual.widgets import DataTable

class Overriding(DataTable):
    def _render_cell(self, *args, **kwargs):  # DataTable's private method
        return super()._render_cell(*args, **kwargs)

    def go(self):
        self._show_hover_cursor = True  # DataTable's private state
        self._clear_caches()
        getattr(self, "_update_dimensions")([])
"""


def test_the_check_finds_what_the_old_table_did():
    """The check itself, on a table that does what the old one did: an override of a
    private DataTable method, a call to one, DataTable's private state set, a getattr of
    one (the stock instance it learns DataTable's attributes from builds with no app)."""
    module = ModuleType("overriding")
    exec(compile(BAD, "overriding", "exec"), module.__dict__)
    found = private_uses(module, BAD)
    assert "Overriding._render_cell overrides Textual's" in found
    assert "line 6: ._render_cell" in found  # super()._render_cell
    assert "line 10: ._clear_caches" in found
    assert "self._show_hover_cursor is Textual's" in found
    assert "line 11: getattr(…, '_update_dimensions')" in found
