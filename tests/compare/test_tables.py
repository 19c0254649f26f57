"""Tables of rows with repeats: mean ± sd per repeat, pooling stated, a consistency table."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from repro.bundle.redact import Redactor
from repro.report.aggregate import collect
from repro.report.paper import render
from tests.compare.bundles import step, transcript, write_bundle
from tests.fixtures.synthetic import CANARY

STEADY = transcript(step(1))


def flaky_on_repeat_two(cell):
    """notes-002 passes in repeat 1 only (with another transcript in repeat 2); notes-003 never passes."""
    second = cell.repeat == 2
    return [
        ("notes-001", "notes", True, None, STEADY),
        (
            "notes-002",
            "notes",
            not second,
            "stuck" if second else None,
            transcript(step(1), step(2)) if second else STEADY,
        ),
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
    assert tex.count("\\begin{tabular}") == 5 and tex.count("\\end{tabular}") == 5
    assert "2.50\\,$\\pm$\\,0.71" in tex and "pool them as independent trials" in tex
    assert "notes-002 \\\\" in tex


def test_single_repeat_tables_are_unchanged(tmp_path):
    tables = collect([write_bundle(tmp_path / "run", flaky_on_repeat_two, models=1)], Redactor(CANARY))
    render(tables, tmp_path / "tables")
    assert "Repeats and consistency" not in (tmp_path / "tables" / "results.md").read_text()
    # results, categories, failures, where the time went
    assert (tmp_path / "tables" / "results.tex").read_text().count("\\begin{tabular}") == 4


def compile_latex(out) -> None:
    (out / "doc.tex").write_text(
        "\\documentclass{article}\\usepackage{booktabs}\\usepackage{graphicx}\\usepackage[margin=1cm,landscape]{geometry}\\begin{document}\\input{results.tex}\\end{document}\n"
    )
    proc = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
        cwd=out,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-2000:]


NEEDS_LATEX = pytest.mark.skipif(
    shutil.which("pdflatex") is None, reason="pdflatex not installed; the structure tests above cover the LaTeX"
)


@NEEDS_LATEX
def test_latex_with_consistency_compiles(rendered):
    compile_latex(rendered[1])


def by_protocol(cell) -> list:
    """json_schema passes both notes scenarios, react only the first."""
    return [
        ("notes-001", "notes", True, None, None),
        ("notes-002", "notes", cell.protocol == "json_schema", "wrong_outcome", None),
    ]


def test_protocols_compare_side_by_side(tmp_path):
    tables = collect(
        [write_bundle(tmp_path / "run", by_protocol, models=2, protocols=("json_schema", "react"))], Redactor(CANARY)
    )
    assert tables.protocols == ["json_schema", "react"]
    (first, second) = tables.protocol_comparison
    assert {first.model, second.model} == {row.model for row in tables.rows}
    assert first.by_protocol["json_schema"].passed == 2 and first.by_protocol["react"].passed == 1
    assert first.by_protocol["react"].protocol_totals.valid_call_rate == 0.5
    render(tables, tmp_path / "paper")
    markdown = (tmp_path / "paper" / "results.md").read_text()
    assert (
        "**Protocols compared**" in markdown
        and "| json_schema passed | json_schema valid calls | react passed | react valid calls |" in markdown
    )
    assert "| 2/2 | 1.00 | 1/2 | 0.50 |" in markdown
    assert "Protocols compared" in (tmp_path / "paper" / "results.tex").read_text()


def test_one_protocol_has_no_comparison(tmp_path):
    tables = collect([write_bundle(tmp_path / "run", by_protocol, models=1)], Redactor(CANARY))
    assert tables.protocol_comparison == []


@NEEDS_LATEX
def test_latex_with_protocol_comparison_compiles(tmp_path):
    tables = collect(
        [
            write_bundle(
                tmp_path / "run",
                by_protocol,
                models=2,
                protocols=("json_schema", "native_tools", "react", "json_prompt"),
            )
        ],
        Redactor(CANARY),
    )
    render(tables, tmp_path / "paper")
    compile_latex(tmp_path / "paper")


def ladder(cell) -> list:
    """Levels 0-2 pass, level 3 fails, level 4 passes (above the break, so not reached)."""
    return [
        (f"ladder-{level}-001", f"ladder-{level}", level != 3, None if level != 3 else "wrong_outcome", None)
        for level in range(5)
    ]


def test_the_ladder_has_levels_a_highest_level_and_a_figure(tmp_path):
    from repro.report.figures import write_figures

    tables = collect([write_bundle(tmp_path / "run", ladder, models=1)], Redactor(CANARY))
    (row,) = tables.ladder_rows
    assert row.by_level == {0: (1, 1), 1: (1, 1), 2: (1, 1), 3: (0, 1), 4: (1, 1)} and row.highest_level == 2
    assert not any(c.startswith("ladder-") for c in tables.categories)
    names = [p.stem for p in write_figures(tables, tmp_path / "paper") if p.suffix == ".svg"]
    assert names == ["pass_rate", "categories", "ladder", "time"]
    render(tables, tmp_path / "paper", names)
    markdown = (tmp_path / "paper" / "results.md").read_text()
    assert "**Capability ladder**" in markdown and "| 1/1 | 1/1 | 1/1 | 0/1 | 1/1 | 2 |" in markdown
    assert "![ladder](figures/ladder.svg)" in markdown
    assert json.loads((tmp_path / "paper" / "results.json").read_text())["rows"][0]["highest_level"] == 2
    if shutil.which("pdflatex"):
        compile_latex(tmp_path / "paper")


def test_where_the_time_went(tmp_path):
    tables = collect([write_bundle(tmp_path / "run", by_protocol, models=1)], Redactor(CANARY))
    (row,) = tables.rows
    time = row.time
    assert (time.engine_boot_s, time.wall_s, time.prompt_s, time.generation_s) == (2.0, 2.0, 0.2, 0.4)
    assert time.harness_s == 1.4 and time.prompt_tps == 1000.0 and time.generation_tps == 100.0
    assert time.per_scenario_s == round(time.wall_s / row.total, 3)  # type: ignore[operator]
    render(tables, tmp_path / "paper")
    assert (
        f"| 2.0 | - | {time.per_scenario_s:.1f} | 0.2 | 0.4 | 1.4 | 1000.0 | 100.0 |"
        in (tmp_path / "paper" / "results.md").read_text()
    )


def test_a_harness_without_engine_timings_has_its_wall_time_and_no_split():
    """The Tholos runner's results carry no engine timings: its row says '-' (None), never 0."""
    from repro.report.tables import TimeSplit

    time = TimeSplit.of([], [])
    assert (time.prompt_s, time.generation_s, time.harness_s, time.per_scenario_s) == (None, None, None, None)


def test_failures_by_layer_and_type_and_the_mean_score(tmp_path):
    tables = collect([write_bundle(tmp_path / "run", flaky_on_repeat_two, repeats=2, models=1)], Redactor(CANARY))
    (row,) = tables.rows
    assert row.failure_types == {"stuck": 1, "wrong_outcome": 2}
    assert row.failure_layers == {"configuration": 0, "engine": 0, "protocol": 0, "behaviour": 1, "outcome": 2}
    assert tables.failure_type_columns == ["stuck", "wrong_outcome"]
    assert row.partial_score == round((5 * 1.0 + 3 * 0.25) / 8, 3)  # five passes, three failures at 0.25
    render(tables, tmp_path / "paper")
    markdown = (tmp_path / "paper" / "results.md").read_text()
    assert (
        "| 0.72 |" in markdown
        and "**Why scenarios failed**" in markdown
        and "| 0 | 0 | 0 | 1 | 2 | 1 | 2 |" in markdown
    )
    assert json.loads((tmp_path / "paper" / "results.json").read_text())["rows"][0]["failure_layers"]["outcome"] == 2
