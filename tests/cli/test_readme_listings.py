"""The README's "Understanding backward hooks" listing is what `hooktui trace
sample_models/seed.py --legacy` prints on the installed torch: every backward row, the same
numbers, hooks, modules, nodes and shapes (it had left out the root's legacy firing)."""

import re

from cli_run import ROOT, SAMPLES, hooktui

ROW = re.compile(r"^\s*(\d+)\s+backward\s")


def rows(text: str) -> list[list[str]]:
    """The backward firing rows of a listing, as columns (two or more spaces apart)."""
    return [re.split(r"\s{2,}", line.strip()) for line in text.splitlines() if ROW.match(line)]


def test_understanding_backward_hooks_listing_is_what_trace_prints():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Understanding backward hooks with hooktui", 1)[1]
    listing = section.split("```", 2)[1]
    printed = hooktui("trace", SAMPLES / "seed.py", "--legacy")
    assert printed.returncode == 0, printed.stderr
    assert rows(listing) == rows(printed.stdout)
