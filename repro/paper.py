"""Paper tables (LaTeX booktabs and Markdown) rendered from VALID cells only.

INVALID cells never enter a table: they appear in the exclusions list with their reasons, as
do cells excluded by the plan or the latency gate.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import jinja2
from pydantic import BaseModel

from repro.check import RunVerdict, check_run, find_runs
from repro.config import PROJECT_ROOT
from repro.redact import Redactor
from repro.results import atomic_write, load_cell, read_jsonl

TEMPLATES = PROJECT_ROOT / "paper" / "templates"
SAFETY_CATEGORY = "injection"


class Interval(BaseModel):
    low: float
    high: float


class TableRow(BaseModel):
    model: str
    model_sha256: str
    engine_id: str
    engine_identity: str
    family: str
    quant: str
    file_size_mb: float
    engine: str
    protocol: str
    suite: str
    cells: int
    passed: int
    total: int
    interval: Interval
    by_category: dict[str, tuple[int, int]]
    scenarios: dict[str, list[bool]] = {}  # scenario id -> passed, one entry per repeat

    @property
    def key(self) -> str:
        return f"{self.model} / {self.engine_id} / {self.protocol} / {self.suite}"


class Exclusion(BaseModel):
    cell_id: str
    verdict: str
    reasons: list[str]


class PaperTables(BaseModel):
    rows: list[TableRow]
    categories: list[str]
    safety_category: str
    exclusions: list[Exclusion]
    runs: list[str]


def wilson(passed: int, total: int, z: float = 1.96) -> Interval:
    """Wilson score interval for a binomial proportion (95% by default)."""
    if total == 0:
        return Interval(low=0.0, high=0.0)
    p = passed / total
    denominator = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denominator
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denominator
    return Interval(low=max(0.0, centre - half), high=min(1.0, centre + half))


def collect(paths: list[Path], redactor: Redactor | None = None) -> PaperTables:
    verdicts: list[tuple[Path, RunVerdict]] = []
    for path in paths:
        for run_dir in find_runs(path):
            verdicts.append((run_dir, check_run(run_dir, redactor)))
    groups: dict[tuple, list] = {}
    exclusions = []
    for run_dir, run in verdicts:
        for cell in run.cells:
            if cell.verdict != "VALID":
                exclusions.append(Exclusion(cell_id=cell.cell_id, verdict=cell.verdict, reasons=cell.reasons))
                continue
            cell_dir = run_dir / "cells" / cell.cell_id
            record = load_cell(cell_dir)
            key = (record.cell.model.id, record.cell.engine.id, record.cell.protocol, record.cell.suite.id)
            groups.setdefault(key, []).append((record, cell_dir))
    rows = [_row(records) for records in groups.values()]
    categories = sorted({c for row in rows for c in row.by_category} - {SAFETY_CATEGORY})
    return PaperTables(rows=rows, categories=categories, safety_category=SAFETY_CATEGORY, exclusions=exclusions, runs=[r.run_id for _, r in verdicts])


def _row(entries: list) -> TableRow:
    records = [record for record, _ in sorted(entries, key=lambda entry: entry[0].cell.repeat)]
    first = records[0].cell
    scenarios: dict[str, list[bool]] = {}
    for _, cell_dir in sorted(entries, key=lambda entry: entry[0].cell.repeat):
        for row in read_jsonl(cell_dir / "scenarios.jsonl"):
            scenarios.setdefault(row["id"], []).append(bool(row.get("passed")))
    passed = sum(r.summary.passed for r in records)
    total = sum(r.summary.total for r in records)
    by_category: dict[str, list[int]] = {}
    for record in records:
        for category, (p, n) in record.summary.by_category.items():
            counts = by_category.setdefault(category, [0, 0])
            counts[0] += p
            counts[1] += n
    return TableRow(
        model=first.model.id,
        model_sha256=first.model.sha256,
        engine_id=first.engine.id,
        engine_identity=first.engine.expected_identity(),
        family=first.model.family,
        quant=first.model.quant,
        file_size_mb=round(first.model.file_size / 1024**2, 1),
        engine=first.engine.label,
        protocol=first.protocol,
        suite=first.suite.id,
        cells=len(records),
        passed=passed,
        total=total,
        interval=wilson(passed, total),
        by_category={k: (v[0], v[1]) for k, v in by_category.items()},
        scenarios=dict(sorted(scenarios.items())),
    )


def tex_escape(value: object) -> str:
    text = str(value)
    for char, replacement in (
        ("\\", r"\textbackslash{}"),
        ("&", r"\&"),
        ("%", r"\%"),
        ("$", r"\$"),
        ("#", r"\#"),
        ("_", r"\_"),
        ("{", r"\{"),
        ("}", r"\}"),
        ("~", r"\textasciitilde{}"),
        ("^", r"\textasciicircum{}"),
    ):
        text = text.replace(char, replacement)
    return text


def md_escape(value: object) -> str:
    return str(value).replace("|", "\\|")


def render(tables: PaperTables, out_dir: Path) -> list[Path]:
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    environment.filters["tex"] = tex_escape
    environment.filters["md"] = md_escape
    written = []
    for template, name in (("results.md.j2", "results.md"), ("results.tex.j2", "results.tex")):
        text = environment.get_template(template).render(t=tables)
        atomic_write(out_dir / name, text.encode())
        written.append(out_dir / name)
    data = tables.model_dump(mode="json")  # the numbers themselves, for `repro verify`
    atomic_write(out_dir / "results.json", (json.dumps(data, indent=2, sort_keys=True) + "\n").encode())
    return written + [out_dir / "results.json"]
