"""`repro verify`: a rerun compared with published numbers, row by row and scenario by scenario.

Published numbers are the `results.json` that `repro paper render` writes beside the tables. A
row is reproduced when the rerun has a VALID row with the same model bytes, engine identity,
protocol and suite, and every scenario has the same outcome; otherwise every difference is named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ValidationError

from repro.aggregate import PaperTables, TableRow
from repro.errors import BadInput

Status = Literal["reproduced", "differs", "missing", "extra"]


class RowComparison(BaseModel):
    key: str
    status: Status
    published: str | None = None
    rerun: str | None = None
    differences: list[str] = []


def load_published(path: Path) -> PaperTables:
    try:
        return PaperTables.model_validate_json(path.read_text())
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except ValidationError as error:
        raise BadInput(f"{path}: not a results.json written by repro paper render ({error.error_count()} problems)") from None


def compare(published: PaperTables, rerun: PaperTables) -> list[RowComparison]:
    reruns = {row.key: row for row in rerun.rows}
    comparisons = []
    for row in published.rows:
        again = reruns.pop(row.key, None)
        if again is None:
            comparisons.append(RowComparison(key=row.key, status="missing", published=_score(row), differences=["no VALID rerun of this row"]))
            continue
        differences = row_differences(row, again)
        status: Status = "differs" if differences else "reproduced"
        comparisons.append(RowComparison(key=row.key, status=status, published=_score(row), rerun=_score(again), differences=differences))
    for key, row in reruns.items():
        comparisons.append(RowComparison(key=key, status="extra", rerun=_score(row), differences=["not in the published numbers"]))
    return comparisons


def row_differences(published: TableRow, rerun: TableRow) -> list[str]:
    differences = []
    if published.model_sha256 != rerun.model_sha256:
        differences.append(f"model bytes differ: sha256 {published.model_sha256[:12]} published, {rerun.model_sha256[:12]} rerun")
    if published.engine_identity != rerun.engine_identity:
        differences.append(f"engine identity differs: {published.engine_identity} published, {rerun.engine_identity} rerun")
    if (published.passed, published.total) != (rerun.passed, rerun.total):
        differences.append(f"passed {published.passed}/{published.total} published, {rerun.passed}/{rerun.total} rerun")
    for scenario in sorted(set(published.scenarios) | set(rerun.scenarios)):
        before, after = published.scenarios.get(scenario), rerun.scenarios.get(scenario)
        if before is None or after is None:
            differences.append(f"scenario {scenario}: only in the {'rerun' if before is None else 'published numbers'}")
        elif before != after:
            differences.append(f"scenario {scenario}: {_outcomes(before)} published, {_outcomes(after)} rerun")
    return differences


def _score(row: TableRow) -> str:
    return f"{row.passed}/{row.total}"


def _outcomes(values: list[bool]) -> str:
    return ", ".join("pass" if value else "fail" for value in values)
