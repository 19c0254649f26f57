"""Paper tables: numbers from VALID cells only, Wilson intervals, exclusions with reasons."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from repro.bundle.layout.loading import load_cell
from repro.bundle.redact import Redactor
from repro.report.aggregate import collect
from repro.report.paper import render
from repro.report.stats import wilson
from tests.fixtures.synthetic import CANARY, write_bundle


def test_wilson_interval_known_values():
    interval = wilson(137, 160)
    assert round(interval.low, 3) == 0.794 and round(interval.high, 3) == 0.902
    assert wilson(0, 10).low == 0.0 and wilson(10, 10).high == 1.0
    assert wilson(0, 0).high == 0.0


def test_tables_hold_the_measured_numbers(tmp_path):
    run = write_bundle(tmp_path / "run1")
    tables = collect([run], Redactor(CANARY))
    written = render(tables, tmp_path / "tables")
    markdown = (tmp_path / "tables" / "results.md").read_text()
    assert "| SmolLM2 135M | Q4_1 | 93.8 | b11434 | json_schema | synthetic | 2/3 |" in markdown
    assert "| Qwen2.5 0.5B | Q4_K_M |" in markdown and "| 1/3 |" in markdown
    assert "smollm2-135m-instruct-q4_1 (Q4_1, 93.8 MB" in markdown  # the key
    assert "No cell was excluded." in markdown
    tex = (tmp_path / "tables" / "results.tex").read_text()
    assert "\\toprule" in tex and "\\bottomrule" in tex and "smollm2-135m-instruct-q4\\_1" in tex
    # results, categories, failures, where the time went
    assert tex.count("\\begin{tabular}") == 4 and tex.count("\\end{tabular}") == 4
    assert [p.name for p in written] == ["results.md", "results.tex", "results.json"]


def test_invalid_cell_only_in_exclusions(tmp_path):
    run = write_bundle(tmp_path / "run1")
    first = sorted((run / "cells").iterdir())[0]
    (first / "engine.log").write_text("tampered\n")
    tables = collect([run], Redactor(CANARY))
    tampered_model = load_cell(first).cell.model.id
    assert len(tables.rows) == 1 and tables.rows[0].model != tampered_model
    assert tables.exclusions[0].cell_id == first.name and tables.exclusions[0].verdict == "INVALID"
    render(tables, tmp_path / "tables")
    markdown = (tmp_path / "tables" / "results.md").read_text()
    assert f"`{first.name}` (INVALID)" in markdown and "sha256 differs" in markdown
    assert tampered_model not in markdown.split("**Excluded cells**")[0]


def with_an_inexact_row(tables):
    """The first row as if its engine had run two parallel slots with prompt-cache reuse."""
    first = tables.rows[0]
    inexact = first.model_copy(
        update={"execution": first.execution.model_copy(update={"slots": 2, "cache_prompt": True})}
    )
    return tables.model_copy(update={"rows": [inexact, *tables.rows[1:]]})


def test_an_inexact_row_is_marked_in_every_table(tmp_path):
    tables = with_an_inexact_row(collect([write_bundle(tmp_path / "run1")], Redactor(CANARY)))
    render(tables, tmp_path / "tables")
    markdown = (tmp_path / "tables" / "results.md").read_text()
    assert markdown.count("b11434 †") == 1 and "† Not exact" in markdown
    assert f"{tables.rows[0].label}: 2 threads, 2 slots, prompt cache on" in markdown
    assert "$^\\dagger$Not exact" in (tmp_path / "tables" / "results.tex").read_text()


@pytest.mark.skipif(
    shutil.which("pdflatex") is None, reason="pdflatex not installed; the structure test above covers the LaTeX"
)
@pytest.mark.parametrize("inexact", [False, True], ids=["exact", "inexact-row"])
def test_latex_compiles(tmp_path, inexact):
    run = write_bundle(tmp_path / "run1")
    tables = collect([run], Redactor(CANARY))
    render(with_an_inexact_row(tables) if inexact else tables, tmp_path)
    doc = tmp_path / "doc.tex"
    doc.write_text(
        "\\documentclass{article}\\usepackage{booktabs}\\usepackage[margin=1cm,landscape]{geometry}\\begin{document}\\input{results.tex}\\end{document}\n"
    )
    proc = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-2000:]
