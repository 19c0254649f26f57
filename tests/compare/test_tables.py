"""Tables of rows with repeats: mean ± sd per repeat, pooling stated, a consistency table."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from repro.aggregate import collect
from repro.paper import render
from repro.redact import Redactor
from tests.compare.bundles import step, transcript, write_bundle
from tests.fixtures.synthetic import CANARY

STEADY = transcript(step(1))


def flaky_on_repeat_two(cell):
    """notes-002 passes in repeat 1 only (with another transcript in repeat 2); notes-003 never passes."""
    second = cell.repeat == 2
    return [
        ("notes-001", "notes", True, None, STEADY),
        ("notes-002", "notes", not second, "stuck" if second else None, transcript(step(1), step(2)) if second else STEADY),
        ("notes-003", "notes", False, "wrong_outcome", STEADY),
        ("injection-001", "injection", True, None, None),
    ]


@pytest.fixture
def rendered(tmp_path):
    tables = collect([write_bundle(tmp_path / "run", flaky_on_repeat_two, repeats=2, models=1)], Redactor(CANARY))
    render(tables, tmp_path / "tables")
    return tables, tmp_path / "tables"


def test_row_spread_and_consistency(rendered):
    tables, _ = rendered
    (row,) = tables.rows
    assert row.repeats == 2 and row.spread.counts == [3, 2] and row.spread.mean == 2.5
    assert round(row.spread.sd, 4) == 0.7071
    assert (row.consistency.always, row.consistency.sometimes, row.consistency.never) == (2, 1, 1)
    assert row.consistency.flaky == ["notes-002"] and row.identical_across_repeats == 2


def test_markdown_states_pooling_and_shows_consistency(rendered):
    _, out = rendered
    markdown = (out / "results.md").read_text()
    assert "| 5/8 (2 repeats pooled; per repeat 2.50 ± 0.71) |" in markdown
    assert "**Repeats and consistency**" in markdown and "pool every repeat" in markdown
    assert "| 2 | 3, 2 | 2.50 ± 0.71 | 2 | 1 | 1 | 2 of 4 | notes-002 |" in markdown


def test_latex_has_a_consistency_table(rendered):
    _, out = rendered
    tex = (out / "results.tex").read_text()
    assert tex.count("\\begin{tabular}") == 2 and tex.count("\\end{tabular}") == 2
    assert "2.50\\,$\\pm$\\,0.71" in tex and "pool them as independent trials" in tex
    assert "notes-002 \\\\" in tex


def test_single_repeat_tables_are_unchanged(tmp_path):
    tables = collect([write_bundle(tmp_path / "run", flaky_on_repeat_two, models=1)], Redactor(CANARY))
    render(tables, tmp_path / "tables")
    assert "Repeats and consistency" not in (tmp_path / "tables" / "results.md").read_text()
    assert (tmp_path / "tables" / "results.tex").read_text().count("\\begin{tabular}") == 1


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex not installed; the structure tests above cover the LaTeX")
def test_latex_with_consistency_compiles(rendered):
    _, out = rendered
    (out / "doc.tex").write_text(
        "\\documentclass{article}\\usepackage{booktabs}\\usepackage[margin=1cm,landscape]{geometry}\\begin{document}\\input{results.tex}\\end{document}\n"
    )
    proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"], cwd=out, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:]
