"""A self-contained `report.html`: a page a person reads to see why a scenario failed.

Its parts: the setup (how the numbers were made, and whether the run is partial), a table of
contents, the summary and category tables, a scenario-by-protocol grid, the figures, why
scenarios failed, consistency over repeats, the exclusions, and every scenario with a summary
line (outcome, failure layer and type, failed checks, partial credit) over its transcript drawn
as chat turns, the failing step marked. "Failures first" and "failures only" are CSS toggles.

No script, no remote link, no network: figures are inline SVG and the style is inline, so the file
opens the same anywhere (and a browser logs nothing). When `repro export inspect` wrote its logs
into `inspect/` beside the report, each row links to its cells' logs there.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import jinja2
from pydantic import BaseModel

from harness.contracts import FAILURE_LAYER, ScenarioResult
from repro.core.files import atomic_write
from repro.core.templating import template_environment
from repro.report.aggregate import ValidCell
from repro.report.export import log_path
from repro.report.paper import TEMPLATES
from repro.report.runtimes import RuntimeSummary
from repro.report.tables import PROTOCOL_SHORT, PaperTables, TableRow
from repro.report.turns import Turn, transcript_turns

if TYPE_CHECKING:
    from repro.report.figures import Rendered

REPORT = "report.html"
INSPECT_DIR = "inspect"  # where report.html looks for `repro export inspect` logs, beside itself
MAX_TURNS = 400  # turns drawn per transcript (a page, not a dump); the rest is counted


class Attempt(BaseModel):
    """One repeat of a scenario: its outcome, why it failed, and its turns."""

    repeat: int
    passed: bool
    failure_type: str | None = None
    failure_layer: str | None = None
    failure_step: int | None = None
    failure_evidence: str | None = None
    failed_checks: list[str] = []
    checks_total: int = 0
    partial_score: float | None = None
    transcript_sha256: str = ""
    turns: list[Turn] = []
    turns_left_out: int = 0

    @property
    def summary(self) -> str:
        """E.g. "fail: behaviour / stuck at step 3; failed checks: asked, row (2 of 4); partial 0.50"."""
        if self.passed:
            parts = ["pass"]
        else:
            where = f" at step {self.failure_step}" if self.failure_step is not None else ""
            parts = [f"fail: {self.failure_layer or 'unknown'} / {self.failure_type or 'unknown'}{where}"]
            if self.failed_checks:
                parts.append(
                    f"failed checks: {', '.join(self.failed_checks)} ({len(self.failed_checks)} of {self.checks_total})"
                )
        if self.partial_score is not None:
            parts.append(f"partial {self.partial_score:.2f}")
        return "; ".join(parts)


class ScenarioView(BaseModel):
    id: str
    category: str
    attempts: list[Attempt]

    @property
    def failed(self) -> bool:
        return any(not a.passed for a in self.attempts)

    @property
    def anchor(self) -> str:
        return self.id


class RowView(BaseModel):
    """A table row, its scenarios, and the exported logs of its cells (when beside the report)."""

    row: TableRow
    anchor: str
    scenarios: list[ScenarioView]
    logs: list[str] = []  # relative links to inspect logs


class GridCell(BaseModel):
    row_anchor: str
    passed: list[bool]
    failure_types: list[str]


class Grid(BaseModel):
    """One setting (model, suite, engine, decoding, profile) with a column per protocol it ran."""

    title: str
    protocols: list[str]
    scenarios: list[str]
    cells: dict[str, dict[str, GridCell]]  # scenario -> protocol -> its outcome
    # category -> its scenarios: the grid's sections, so 160 scenarios stay readable
    categories: dict[str, list[str]] = {}

    def passed(self, category: str, protocol: str) -> str:
        """ "passed of scenarios" of a category under a protocol (every attempt passed counts)."""
        outcomes = [self.cells[s][protocol] for s in self.categories[category] if protocol in self.cells[s]]
        return f"{sum(all(c.passed) and bool(c.passed) for c in outcomes)} of {len(outcomes)}"


def environment() -> jinja2.Environment:
    env = template_environment(TEMPLATES, autoescape=True, keep_trailing_newline=False)
    env.globals["PROTOCOL_SHORT"] = PROTOCOL_SHORT
    env.filters["compact"] = compact_json
    return env


def compact_json(value: object) -> str:
    """A call's arguments on one line, as text (the page escapes it, as it does every text)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def inline_svg(data: bytes) -> str:
    """An SVG file's <svg> element, for inlining (the XML prolog and doctype dropped)."""
    text = data.decode()
    return text[text.index("<svg") :]


def attempt(cell: ValidCell, result: ScenarioResult) -> Attempt:
    transcript = cell.transcript(result.id)
    turns = transcript_turns(transcript or [], result.failure_step)
    return Attempt(
        repeat=cell.record.cell.repeat,
        passed=result.passed,
        failure_type=result.failure_type,
        failure_layer=FAILURE_LAYER.get(result.failure_type) if result.failure_type else None,
        failure_step=result.failure_step,
        failure_evidence=result.failure_evidence,
        failed_checks=[check.type for check in result.failed_checks],
        checks_total=result.checks_total,
        partial_score=result.partial_score,
        transcript_sha256=cell.transcript_sha256(result.id),
        turns=turns[:MAX_TURNS],
        turns_left_out=max(len(turns) - MAX_TURNS, 0),
    )


def row_views(tables: PaperTables, cells: dict[str, list[ValidCell]], out_dir: Path) -> list[RowView]:
    views = []
    for number, row in enumerate(tables.rows, start=1):
        row_cells = cells.get(row.key, [])
        scenarios: dict[str, ScenarioView] = {}
        for cell in row_cells:
            for result in cell.results:
                view = scenarios.setdefault(
                    result.id, ScenarioView(id=result.id, category=result.category, attempts=[])
                )
                view.attempts.append(attempt(cell, result))
        views.append(
            RowView(
                row=row,
                anchor=f"row-{number}",
                scenarios=list(scenarios.values()),
                logs=exported_logs(row_cells, out_dir),
            )
        )
    return views


def exported_logs(cells: list[ValidCell], out_dir: Path) -> list[str]:
    """Links (relative to the report) to the cells' logs under inspect/, those that exist."""
    found = []
    for cell in cells:
        path = log_path(out_dir / INSPECT_DIR, cell.run_id, cell.record.cell.id)
        if path.is_file() and not path.is_symlink():
            found.append(Path(os.path.relpath(path, out_dir)).as_posix())
    return found


def grids(tables: PaperTables, views: list[RowView]) -> list[Grid]:
    """A scenario-by-protocol grid per setting, protocols in the tables' order."""
    by_setting: dict[tuple[str, ...], list[RowView]] = {}
    for view in views:
        by_setting.setdefault(view.row.setting, []).append(view)
    found = []
    for members in by_setting.values():
        first = members[0].row
        protocols = [p for p in tables.protocols if any(m.row.protocol == p for m in members)]
        cells: dict[str, dict[str, GridCell]] = {}
        categories: dict[str, set[str]] = {}
        for member in members:
            for scenario in member.scenarios:
                categories.setdefault(scenario.category, set()).add(scenario.id)
                cells.setdefault(scenario.id, {})[member.row.protocol] = GridCell(
                    row_anchor=member.anchor,
                    passed=[a.passed for a in scenario.attempts],
                    failure_types=[a.failure_type or "" for a in scenario.attempts if not a.passed],
                )
        title = f"{first.model_label} / {first.suite} / {first.engine}" + (f" / {first.run}" if first.run else "")
        sections = {category: sorted(ids) for category, ids in sorted(categories.items())}
        found.append(Grid(title=title, protocols=protocols, scenarios=sorted(cells), cells=cells, categories=sections))
    return found


def render_report(
    tables: PaperTables,
    out_dir: Path,
    cells: dict[str, list[ValidCell]] | None = None,
    rendered: Rendered | None = None,
    runtimes: list[RuntimeSummary] | None = None,
) -> Path:
    """report.html in `out_dir`, its figures inlined from `rendered` when given (else drawn here);
    `runtimes`: what each agent runtime of the runs did (repro.report.runtimes), shown when any ran."""
    from repro.report.figures import render_figures

    drawn = render_figures(tables) if rendered is None else rendered
    figures = {name: inline_svg(formats["svg"]) for name, formats in drawn.items()}
    views = row_views(tables, cells or {}, out_dir)
    html = (
        environment()
        .get_template("report.html.j2")
        .render(
            t=tables,
            figures=figures,
            views=views,
            grids=grids(tables, views),
            inspect_dir=INSPECT_DIR,
            runtimes=runtimes or [],
        )
    )
    path = out_dir / REPORT
    atomic_write(path, html.encode())
    return path
