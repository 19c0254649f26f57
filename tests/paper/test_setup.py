"""Tables that say how they were made: the setup in every header and caption, short row labels
with their key, the category table split so it fits a page, and a partial run said aloud
(repro.report.coverage.run_coverage) in results.json, every table and report.html."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from repro.bundle.layout.loading import load_run
from repro.bundle.layout.reader import BundleReader
from repro.bundle.layout.writer import Bundle
from repro.bundle.records import RunRecord
from repro.bundle.redact import Redactor
from repro.check.verdict import check_run
from repro.report.aggregate import collect, collect_with_cells
from repro.report.coverage import run_coverage
from repro.report.html import render_report
from repro.report.paper import render
from repro.report.tables import PaperTables
from tests.fixtures.synthetic import CANARY, write_bundle


def narrowed(run_dir: Path, **update: object) -> Path:
    """The bundle as a run with `only` or `shard` (and its planned cells) would have written it:
    the cells it did not select removed, the manifest written again."""
    record = load_run(run_dir)
    changed = RunRecord.model_validate(record.model_dump() | update)
    for cell_id in set(record.planned_cells) - set(changed.planned_cells):
        shutil.rmtree(BundleReader(run_dir).cell_dir(cell_id))
    bundle = Bundle(run_dir, Redactor(CANARY))
    bundle.write_run(changed)
    bundle.write_manifest()
    return run_dir


def planned(run_dir: Path) -> list[str]:
    return load_run(run_dir).planned_cells


def test_every_table_states_its_setup(tmp_path: Path) -> None:
    tables = collect([write_bundle(tmp_path / "run1")], Redactor(CANARY))
    render(tables, tmp_path / "out")
    markdown = (tmp_path / "out" / "results.md").read_text()
    for fact in (
        "profile cpu (2 x86_64 cores (test cpu), 8 GB, no GPU)",
        "commit aaaaaaaaaaaa",
        "repro 0.1.0",
        "repro check: 2 VALID, 0 EXCLUDED, 0 INVALID",
        "not signed",
    ):
        assert fact in markdown
    assert "decoding: t=0 seed=42" in markdown and "execution: 2 threads, 1 slot, prompt cache per scenario" in markdown
    tex = (tmp_path / "out" / "results.tex").read_text()
    assert (
        "Setup: run run1: matrix smoke, profile cpu" in tex
        and tex.count("Setup as in Table~\\ref{tab:repro-results}") >= 2
    )
    assert "\\begin{tabular}{llrllllrr}" in tex  # Size right-aligned, Engine left
    assert "partial:" not in markdown and not tables.setup.coverage.partial


def test_rows_have_short_labels_and_a_key(tmp_path: Path) -> None:
    tables = collect([write_bundle(tmp_path / "run1", protocols=("json_schema", "react"))], Redactor(CANARY))
    labels = [row.label for row in tables.rows]
    assert "SmolLM2 135M / schema / synthetic" in labels and "Qwen2.5 0.5B / ReAct / synthetic" in labels
    assert len(set(labels)) == len(labels)
    key = dict(tables.key)
    assert key["SmolLM2 135M"].startswith("smollm2-135m-instruct-q4_1 (Q4_1") and key["ReAct"] == "protocol react"
    render(tables, tmp_path / "out")
    assert "\\texttt{" not in (tmp_path / "out" / "results.tex").read_text()  # no 90-character cell id in a caption


def test_an_only_run_is_partial_in_every_table(tmp_path: Path) -> None:
    run = write_bundle(tmp_path / "run1")
    first = planned(run)[0]
    narrowed(run, only=[first], planned_cells=[first])
    tables, cells = collect_with_cells([run], Redactor(CANARY))
    assert [
        row.passed for row in tables.rows
    ] and tables.setup.coverage.label == "partial: 1 of 2 planned cells (--only, 1 cell)"
    out = tmp_path / "out"
    render(tables, out)
    render_report(tables, out, cells)
    label = tables.setup.coverage.label
    markdown, tex, html = ((out / name).read_text() for name in ("results.md", "results.tex", "report.html"))
    assert (
        markdown.count(label) >= 3
        and tex.count(label) >= 3
        and 'id="partial-banner"' in html
        and html.count(label) >= 3
    )
    data = json.loads((out / "results.json").read_text())
    assert data["setup"]["coverage"]["partial"] is True and data["setup"]["coverage"]["label"] == label
    assert PaperTables.model_validate(data).setup.coverage.partial  # verify reads it back


def test_one_shard_alone_is_partial_and_a_whole_split_is_not(tmp_path: Path) -> None:
    first = write_bundle(tmp_path / "s1")
    shutil.copytree(first, tmp_path / "s2")
    cells = planned(first)
    narrowed(first, shard="1/2", planned_cells=cells[0::2])
    narrowed(tmp_path / "s2", shard="2/2", planned_cells=cells[1::2])
    alone = run_coverage([check_run(first)])
    assert alone.partial and alone.label == "partial: 1 of 2 planned cells (shard 1 of 2)"
    both = run_coverage([check_run(first), check_run(tmp_path / "s2")])
    assert not both.partial and both.label == "" and both.present == both.planned == 2


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex not installed")
def test_fourteen_categories_fit_a_portrait_page(tmp_path: Path) -> None:
    tables = collect([write_bundle(tmp_path / "run1", protocols=("json_schema", "react"))], Redactor(CANARY))
    categories = [f"category_{n:02d}" for n in range(14)]
    rows = [
        row.model_copy(update={"by_category": {c: (1, 2) for c in categories} | row.by_category}) for row in tables.rows
    ]
    wide = tables.model_copy(update={"rows": rows, "categories": categories})
    assert len(wide.category_chunks()) == 3
    render(wide, tmp_path)
    (tmp_path / "doc.tex").write_text(
        "\\documentclass{article}\\usepackage{booktabs}\\usepackage[a4paper,margin=2cm]{geometry}\\begin{document}\\input{results.tex}\\end{document}\n"
    )
    proc = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert "Overfull \\hbox" not in (tmp_path / "doc.log").read_text(errors="replace")
