"""The rerun's verdict against the bundle it reran: the bundle's rows for the cells the rerun
planned, stated as claims and verified as every claim is (repro.verify.claims, through the
one comparison of setups, repro.bundle.setup), with the setup table of both sides' records beside
it (repro.rerun.preflight) and the exit code of the verify.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from repro.bundle.layout.reader import BundleReader
from repro.bundle.setup import InputDifference
from repro.report.aggregate import collect_with_cells
from repro.rerun.preflight import SetupRow, bundle_side, compare_setups
from repro.spec.claims import LoadedClaims
from repro.verify.claims import PASSING, ClaimsReport, ClaimVerdict, Options, setup_label, verify_claims
from repro.verify.own_claims import published_claims
from repro.verify.published import first_step_finder, host_environments, stated_setups
from repro.verify.rerun_rows import load_rerun


class RerunVerdict(BaseModel):
    bundle: str
    reruns: list[str]
    report: ClaimsReport
    setup: list[SetupRow]

    @property
    def rows(self) -> list[ClaimVerdict]:
        return self.report.verdicts

    @property
    def exit_code(self) -> int:
        return 0 if self.rows and self.report.passed() else 1

    def closing_line(self) -> str:
        """What the rerun found, in one line (ClaimsReport.conclusion), the names to accept
        where only the setup is another, and the exit code."""
        found = self.report.conclusion("in the bundle") if self.rows else "no row to compare"
        refused = sorted({d.name for row in self.rows for d in row.differences if not d.accepted})
        accept = f" (accept these inputs by name with --accept {','.join(refused)})" if refused else ""
        return f"rerun of {self.bundle}: {found}{accept}; exit {self.exit_code}"

    def markdown(self) -> str:
        lines = [f"# Rerun of {self.bundle}", "", f"Reruns: {', '.join(self.reruns)}", ""]
        lines += ["| row | verdict | setup | published | rerun | transcripts |", "|---|---|---|---|---|---|"]
        lines += [
            f"| {_cell(v.about)} | {v.verdict} | {_cell(v.setup)} | {v.claimed} | {v.rerun or '-'} | "
            f"{_cell(_identity(v))} |"
            for v in self.rows
        ]
        lines += ["", "## Setup, input by input", "", "| input | bundle | rerun | |", "|---|---|---|---|"]
        lines += [
            f"| {_cell(r.input)} | {_cell(r.bundle)} | {_cell(r.here)} | "
            f"{'same' if r.same else 'not known' if r.same is None else 'differs'} |"
            for r in self.setup
        ]
        if self.report.host_environment:
            lines += ["", f"Information: {self.report.host_environment}"]
        reasons = [
            f"- {_cell(v.about)}: {_cell(line)}"
            for v in self.rows
            for line in v.reasons + [d.describe() for d in v.differences] + ([v.rule] if v.rule else [])
        ]
        lines += ["", "## What each verdict rests on", "", *reasons] if reasons else []
        return "\n".join([*lines, "", self.closing_line(), ""])


def verdict_of(published: Path, rerun: list[Path], accept: frozenset[str]) -> RerunVerdict:
    """The rerun folders against the published bundle: its rows for the cells the rerun planned."""
    published_side = collect_with_cells([published])  # each bundle is checked once
    loaded, keys = published_claims(published, published_side)
    asked = {cell_id for path in rerun for cell_id in BundleReader(path).run().planned_cells}
    rerun_side, cells = collect_with_cells(rerun), published_side[1]
    wanted = {claim for claim, key in keys.items() if asked & {c.record.cell.id for c in cells.get(key, [])}}
    claims = loaded.claims.model_copy(update={"claims": [c for c in loaded.claims.claims if c.id in wanted]})
    options = Options(
        accept=accept,
        where=first_step_finder(cells, rerun_side[1], keys),
        stated=stated_setups(published_side[0], keys),
    )
    report = verify_claims(
        LoadedClaims(path=loaded.path, sha256=loaded.sha256, claims=claims), load_rerun(rerun, rerun_side), options
    )
    reruns = [BundleReader(p).run().run_id for p in rerun]
    setup = setup_rows(published, rerun[0])
    return RerunVerdict(
        bundle=BundleReader(published).run().run_id,
        reruns=reruns,
        report=with_setup(report, setup, accept).model_copy(
            update={"host_environment": host_environments(published_side[0], rerun_side[0])}
        ),
        setup=setup,
    )


def with_setup(report: ClaimsReport, rows: list[SetupRow], accept: frozenset[str]) -> ClaimsReport:
    """The verdicts held to the setup table both records give: an input the table says differs
    (an engine built from another Dockerfile, another core count) and no verdict names yet is
    named in each verdict, which is then ON ANOTHER SETUP, never plain REPRODUCED (unless accepted)."""
    found = [
        InputDifference(name=row.name, what=row.input, claimed=row.bundle, rerun=row.here, accepted=row.name in accept)
        for row in rows
        if row.differs
    ]
    return report.model_copy(update={"verdicts": [named_setup(v, found) for v in report.verdicts]})


def named_setup(verdict: ClaimVerdict, found: list[InputDifference]) -> ClaimVerdict:
    """One verdict with the setup table's differences it does not name yet (by input name)."""
    named = {d.name for d in verdict.differences}
    added = [d for d in found if d.name not in named]
    if not added or verdict.verdict in ("NOT RERUN", "DIFFERENT"):
        return verdict
    differences = verdict.differences + added
    word = verdict.verdict
    if any(not d.accepted for d in added) and word in PASSING:
        word = "REPRODUCED ON ANOTHER SETUP" if word == "REPRODUCED" else "CONSISTENT ON ANOTHER SETUP"
    return verdict.model_copy(update={"differences": differences, "verdict": word, "setup": setup_label(differences)})


def setup_rows(published: Path, rerun: Path) -> list[SetupRow]:
    """Each side's setup from its own records, for the cells the rerun planned."""
    asked = BundleReader(rerun).run().planned_cells
    sides = []
    for path in (published, rerun):
        reader = BundleReader(path)
        sides.append(bundle_side(reader.run(), [reader.cell(cell_id) for cell_id in asked if reader.has_cell(cell_id)]))
    return compare_setups(sides[0], sides[1])


def _identity(verdict: ClaimVerdict) -> str:
    return verdict.transcripts.summary() if verdict.transcripts else "-"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
