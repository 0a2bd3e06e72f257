"""The one-way boundary in the import graph: the engine never imports Textual, and
viewing a saved trace never imports torch."""

import subprocess
import sys


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\nprint(' '.join(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(out.split())


def test_engine_never_imports_textual():
    loaded = _modules_after(
        "import hooktui.engine.run.session, hooktui.engine.run.loader, hooktui.explain, hooktui.commands.trace, "
        "hooktui.engine.analysis.flow, hooktui.engine.analysis.compare, hooktui.commands.diff, hooktui.engine.analysis.compare_ranks, hooktui.commands.diff_ranks"
    )
    assert "torch" in loaded  # the probe works
    assert not any(name == "textual" or name.startswith("textual.") for name in loaded)


def test_viewing_a_trace_does_not_import_torch():
    loaded = _modules_after(
        "import hooktui, hooktui.commands.view, hooktui.commands.diff, hooktui.commands.diff_ranks, hooktui.engine.records.trace_file, hooktui.ui.app, "
        "hooktui.ui.against, hooktui.ui.screens.overview"
    )
    assert "textual" in loaded  # the probe works
    assert "torch" not in loaded
