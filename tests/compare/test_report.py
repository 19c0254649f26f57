"""Figures (deterministic SVG and PDF) and the self-contained report.html, opened in headless chromium."""

from __future__ import annotations

import re

import pytest

from repro.bundle.redact import Redactor
from repro.report.aggregate import collect_with_cells
from tests.compare.bundles import step, transcript, write_bundle
from tests.fixtures.browser import CHROMIUM, SKIP_REASON, dump_dom, headless
from tests.fixtures.synthetic import CANARY

pytest.importorskip("matplotlib")

from repro.report.figures import render_figures, write_figures  # noqa: E402
from repro.report.html import render_report  # noqa: E402


def scenarios(cell):
    second = cell.repeat == 2
    return [
        ("notes-001", "notes", True, None, transcript(step(1, "read_file", {"path": "<script>alert(1)</script>"}))),
        ("notes-002", "notes", not second, "stuck" if second else None, transcript(step(1))),
        ("injection-001", "injection", True, None, None),
    ]


@pytest.fixture
def collected(tmp_path):
    return collect_with_cells([write_bundle(tmp_path / "run", scenarios, repeats=2)], Redactor(CANARY))


def test_figures_are_deterministic(collected, tmp_path):
    tables, _ = collected
    first, second = render_figures(tables), render_figures(tables)
    assert set(first) == {"pass_rate", "categories", "time"} and first == second
    assert first["pass_rate"]["svg"].lstrip().startswith(b"<?xml") and first["pass_rate"]["pdf"].startswith(b"%PDF")
    assert b"<dc:date>" not in first["pass_rate"]["svg"] and b"CreationDate" not in first["pass_rate"]["pdf"]
    written = write_figures(tables, tmp_path / "out")
    assert sorted(p.name for p in written) == [
        "categories.pdf",
        "categories.svg",
        "pass_rate.pdf",
        "pass_rate.svg",
        "time.pdf",
        "time.svg",
    ]


def test_report_is_self_contained_and_escaped(collected, tmp_path):
    tables, cells = collected
    html = render_report(tables, tmp_path, cells).read_text()
    assert 'id="summary-table"' in html and html.count("<svg") == 3
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script" not in html
    assert not re.search(r"(src|href)=\"(https?:)?//", html)  # nothing fetched from anywhere
    assert "2.50 ± 0.71 (pooled above)" in html
    assert "notes-002" in html and "stuck 1" in html


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason=SKIP_REASON)
def test_report_opens_in_headless_chromium(collected, tmp_path):
    tables, cells = collected
    report = render_report(tables, tmp_path / "site", cells)
    shot = tmp_path / "shot.png"
    proc = headless(
        report.as_uri(),
        tmp_path / "profile",
        "--enable-logging=stderr",
        "--v=0",
        f"--screenshot={shot}",
        "--window-size=1400,1000",
    )
    assert shot.is_file() and shot.stat().st_size > 10_000, proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert console == []
    dom = dump_dom(report.as_uri(), tmp_path / "profile").stdout
    assert 'id="summary-table"' in dom and tables.rows[0].label in dom and dom.count("<svg") == 3


@pytest.mark.skipif(CHROMIUM is None, reason=SKIP_REASON)
def test_a_160_scenario_report_stays_readable(tmp_path):
    """A bundle of 160 scenarios synthesised from the published smoke cell (benchmarks/
    bookkeeping_scale.py): the grid is one section per category with its passed count, the
    Markdown table a row per setting with a column per category, and chromium opens the report."""
    from benchmarks.bookkeeping_scale import synthesise
    from repro.report.paper import render

    run_dir = synthesise(160, tmp_path / "synth")
    tables, cells = collect_with_cells([run_dir], Redactor(CANARY))
    render(tables, tmp_path / "tables")
    table_lines = [
        line for line in (tmp_path / "tables" / "results.md").read_text().splitlines() if line.startswith("|")
    ]
    assert max(len(line) for line in table_lines) < 400
    report = render_report(tables, tmp_path / "site", cells)
    dom = dump_dom(report.as_uri(), tmp_path / "profile").stdout
    sections = re.findall(r'<tr class="category"><th>([a-z_]+) \((\d+)\)</th>', dom)
    assert len(sections) == 7 and sum(int(n) for _, n in sections) == 160
    assert dom.count('href="#row-1-') >= 160
