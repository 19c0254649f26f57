"""The rerun's verdict against the bundle it reran, behind one function, `verdict_of`.

Today it is built on `repro.report.verify.compare` and `collect_with_cells` (row by row, scenario
by scenario, transcript identity k of n), with the setup of each side read from its own records
(repro.rerun.preflight). Per row:

- REPRODUCED: the same outcomes, identical transcripts, the same setup;
- REPRODUCED ON ANOTHER SETUP: the same outcomes and transcripts, but a setup input differs
  (named; it agrees only when every such difference is accepted with --accept);
- CONSISTENT: outcomes or transcripts differ, within the tolerance of the exact McNemar test on
  the flips (the rerun profile's stated tolerance when it has one);
- DIFFERENT: beyond it, or the row differs in what was run (model bytes, engine identity,
  template);
- NOT RERUN: a row of the asked-for cells that the rerun does not hold (VALID).

The exit code is 0 only when every row is REPRODUCED, or REPRODUCED ON ANOTHER SETUP or
CONSISTENT with every setup difference accepted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from repro.bundle.layout import BundleReader
from repro.report.aggregate import TableRow, collect_with_cells
from repro.report.tolerance import judge_paired
from repro.report.verify import RowComparison, compare
from repro.rerun.preflight import SetupRow, bundle_setup, compare_setups, differences
from repro.spec.tolerance import Tolerance

RowVerdict = Literal["REPRODUCED", "REPRODUCED ON ANOTHER SETUP", "CONSISTENT", "DIFFERENT", "NOT RERUN"]
AGREEING = {"REPRODUCED", "REPRODUCED ON ANOTHER SETUP", "CONSISTENT"}
OUTCOME_ONLY = ("scenario ", "passed ")  # the differences compare() names that are outcomes, not inputs


class RerunRow(BaseModel):
    key: str
    verdict: RowVerdict
    published: str | None = None
    rerun: str | None = None
    transcripts: str = ""
    reasons: list[str] = []


class RerunVerdict(BaseModel):
    bundle: str
    reruns: list[str]
    rows: list[RerunRow]
    setup: list[SetupRow]
    accepted: list[str] = []

    @property
    def unaccepted(self) -> list[SetupRow]:
        return differences(self.setup, set(self.accepted))

    @property
    def exit_code(self) -> int:
        agree = bool(self.rows) and all(row.verdict in AGREEING for row in self.rows)
        return 0 if agree and not self.unaccepted else 1

    def closing_line(self) -> str:
        counts: dict[str, int] = {}
        for row in self.rows:
            counts[row.verdict] = counts.get(row.verdict, 0) + 1
        said = ", ".join(f"{n} {name}" for name, n in counts.items()) or "no row to compare"
        named = [f"{row.input} ({row.bundle} -> {row.here})" for row in self.setup if row.differs]
        setup = f"; differs from the bundle: {'; '.join(named)}" if named else "; same setup"
        accept = f" (accept with --accept {','.join(sorted({r.name for r in self.unaccepted}))})" if self.unaccepted else ""
        return f"rerun of {self.bundle}: {said} of {len(self.rows)} rows{setup}{accept}; exit {self.exit_code}"

    def markdown(self) -> str:
        lines = [
            f"# Rerun of {self.bundle}",
            "",
            f"Reruns: {', '.join(self.reruns)}",
            "",
            "| row | verdict | published | rerun | transcripts |",
            "|---|---|---|---|---|",
        ]
        lines += [f"| {_cell(r.key)} | {r.verdict} | {r.published or '-'} | {r.rerun or '-'} | {_cell(r.transcripts)} |" for r in self.rows]
        lines += ["", "## Setup", "", "| input | bundle | rerun | |", "|---|---|---|---|"]
        lines += [f"| {_cell(r.input)} | {_cell(r.bundle)} | {_cell(r.here)} | {_state(r, set(self.accepted))} |" for r in self.setup]
        reasons = [f"- {_cell(r.key)}: {_cell(reason)}" for r in self.rows for reason in r.reasons]
        lines += ["", "## Reasons", "", *reasons] if reasons else []
        return "\n".join([*lines, "", self.closing_line(), ""])


def verdict_of(published: Path, rerun: list[Path], accept: set[str]) -> RerunVerdict:
    """The rerun folders against the published bundle: its rows for the cells the rerun planned."""
    published_tables, published_cells = collect_with_cells([published])
    rerun_tables, rerun_cells = collect_with_cells(rerun)
    asked = {cell_id for path in rerun for cell_id in BundleReader(path).run().planned_cells}
    wanted = [row for row in published_tables.rows if asked & {c.record.cell.id for c in published_cells.get(row.key, [])}]
    published_tables = published_tables.model_copy(update={"rows": wanted})
    setup = setup_rows(published, rerun[0])
    tolerance = BundleReader(rerun[0]).run().profile_settings.tolerance or Tolerance()
    comparisons = compare(published_tables, rerun_tables, published_cells, rerun_cells)
    pairs = {row.key: (row, again) for row in wanted for again in rerun_tables.rows if again.key == row.key}
    rows = [row_verdict(item, pairs.get(item.key), bool(differences(setup)), tolerance) for item in comparisons if item.status != "extra"]
    return RerunVerdict(
        bundle=BundleReader(published).run().run_id, reruns=[BundleReader(p).run().run_id for p in rerun], rows=rows, setup=setup, accepted=sorted(accept)
    )


def setup_rows(published: Path, rerun: Path) -> list[SetupRow]:
    """Each side's setup from its own records, for the cells the rerun planned."""
    asked = BundleReader(rerun).run().planned_cells
    sides = []
    for path in (published, rerun):
        reader = BundleReader(path)
        sides.append(bundle_setup(reader.run(), [reader.cell(cell_id) for cell_id in asked if reader.has_cell(cell_id)]))
    return compare_setups(sides[0], sides[1])


def row_verdict(item: RowComparison, rows: tuple[TableRow, TableRow] | None, other_setup: bool, tolerance: Tolerance) -> RerunRow:
    base = RerunRow(key=item.key, verdict="NOT RERUN", published=item.published, rerun=item.rerun, reasons=list(item.differences))
    if item.status == "missing" or rows is None:
        return base
    identity = item.transcripts
    base.transcripts = identity.summary() if identity else ""
    identical = identity is not None and identity.compared > 0 and not identity.differing and not identity.unrecorded
    if item.status == "reproduced" and identical:
        return base.model_copy(update={"verdict": "REPRODUCED ON ANOTHER SETUP" if other_setup else "REPRODUCED"})
    inputs = [d for d in item.differences if not d.startswith(OUTCOME_ONLY)]
    judgement = judge_paired(outcome_pairs(*rows), tolerance)
    reasons = base.reasons + (identity.differing[:20] if identity else []) + [judgement.describe()]
    verdict: RowVerdict = "CONSISTENT" if judgement.within and not inputs else "DIFFERENT"
    return base.model_copy(update={"verdict": verdict, "reasons": reasons})


def outcome_pairs(published: TableRow, rerun: TableRow) -> list[tuple[bool, bool]]:
    """(published, rerun) pass flags of each scenario and repeat both sides ran."""
    return [
        pair
        for scenario in sorted(set(published.scenarios) & set(rerun.scenarios))
        for pair in zip(published.scenarios[scenario], rerun.scenarios[scenario], strict=False)
    ]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _state(row: SetupRow, accepted: set[str]) -> str:
    if row.same is None:
        return "not known"
    if row.same:
        return "same"
    if not row.counts:
        return "differs (named)"
    return "differs, accepted" if row.name in accepted else "DIFFERS"
