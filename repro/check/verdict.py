"""`repro check`: which cells of a bundle are clean-room, decided from the bundle alone.

A cell is VALID only when every rule holds; EXCLUDED when it was excluded with a recorded
reason (by the plan or the latency gate); INVALID when a rule finds a problem, with every problem;
UNCHECKED when no rule finds one but a rule could not look (an external harness's code that
neither the cache nor the bundle holds: `repro.core.errors.NotAtHand`), with what is missing and
the one command that makes it checkable. INVALID wins over UNCHECKED. Tables are rendered from
VALID cells only; an UNCHECKED cell is listed with the exclusions, with its reason.

The rules live in a table keyed by the bundle's `format_version` (the MLPerf submission checker
keeps its rules the same way): a bundle is checked by the rules of the format it declares, and a
format this version of repro does not know is refused. Each problem is a typed record naming the
rule that caught it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from repro.bundle.evidence import AbsentCell, CellEvidence, CellRule, RecomputedPlan, Rules, RunEvidence
from repro.bundle.layout.names import CELLS_DIR
from repro.bundle.layout.reader import BundleReader
from repro.bundle.records import CellRecord, RunRecord
from repro.bundle.redact import Redactor  # suite_data_homes: read within bounds, once per check
from repro.check.bounds import finite, rule_bounds, seconds_problem
from repro.check.cell_rules import MODEL_OUTPUT_FILES
from repro.check.commit import author_notes, commit_notes
from repro.check.formats import rules_for
from repro.check.served import cell_requests_problem
from repro.core.errors import BadInput, NotAtHand
from repro.core.registry import load_object
from repro.spec.cells import ExclusionKind, exclusion_label, kind_from_text
from repro.spec.findings import Noted
from repro.suites.base import CheckTools
from repro.suites.references import suite_root
from repro.suites.registry import kind_of

Verdict = Literal["VALID", "INVALID", "EXCLUDED", "UNCHECKED"]
VERDICTS: tuple[Verdict, ...] = ("VALID", "EXCLUDED", "INVALID", "UNCHECKED")  # the order counts are said in
Scope = Literal["run", "cell"]
CHECK_TOOLS = CheckTools(
    bounds=rule_bounds,
    finite=finite,
    seconds_problem=seconds_problem,
    model_output_files=MODEL_OUTPUT_FILES,
    requests_problem=cell_requests_problem,
)  # what a kind's rules borrow


class Problem(BaseModel):
    rule: str
    scope: Scope
    cell: str | None = None
    text: str

    def __str__(self) -> str:
        return self.text


class CellVerdict(BaseModel):
    run_id: str
    cell_id: str
    verdict: Verdict
    reasons: list[str] = []
    problems: list[Problem] = []
    # what a rule could not look at, and why (NotAtHand): UNCHECKED unless a problem makes it INVALID
    unchecked: list[Problem] = []
    kind: ExclusionKind | Literal["unknown"] | None = None  # an EXCLUDED cell's (or an engine fault's): who left it out
    notes: list[str] = []  # what the verdict took on the bundle's word, not recomputed (a model-graded score)

    @property
    def kind_label(self) -> str:
        """The kind as a reader sees it ("excluded by the matrix (author)", ...); empty for a cell
        neither excluded nor ended by a fault."""
        return exclusion_label(self.kind) if self.kind else ""


class RunVerdict(BaseModel):
    run_dir: str
    run_id: str
    format_version: int
    cells: list[CellVerdict]
    run_problems: list[Problem] = []
    absent: list[AbsentCell] = []  # planned on the profile, left out by --only or --shard
    # what was compared with what (the project's and the author's files at their commits), never a problem
    notes: list[str] = []
    signer: str | None = None  # with --allowed-signers: who signed the bundle (repro.bundle.signing)

    @property
    def invalid(self) -> list[CellVerdict]:
        return [cell for cell in self.cells if cell.verdict == "INVALID"]

    @property
    def counts(self) -> dict[str, int]:
        """Cells per verdict, as `repro check` and every table say them ("2 VALID, 0 EXCLUDED,
        0 INVALID"): UNCHECKED only when a cell is."""
        counts = {name: sum(cell.verdict == name for cell in self.cells) for name in VERDICTS}
        return {name: n for name, n in counts.items() if n or name != "UNCHECKED"}

    @property
    def unchecked(self) -> list[CellVerdict]:
        return [cell for cell in self.cells if cell.verdict == "UNCHECKED"]

    @property
    def failed(self) -> bool:
        """An INVALID cell or a run-level problem (a run may have no cell left to carry it)."""
        return bool(self.invalid or self.run_problems)


def check_run(
    run_dir: Path, redactor: Redactor | None = None, author_repo: Path | None = None, bundle: BundleReader | None = None
) -> RunVerdict:
    """The run's verdict, read through `bundle` when given (a caller that goes on to read the
    cells, as `paper render` does, reads what was checked, parsed once)."""
    bundle = bundle or BundleReader(run_dir)
    run = bundle.run()
    rules = rules_for(run, run_dir)
    plan = RecomputedPlan.of(run, bundle)  # rules_for refused any format but the current one
    evidence = RunEvidence(run=run, bundle=bundle, redactor=redactor or Redactor(), plan=plan, author_repo=author_repo)
    run_problems = [
        Problem(rule=name, scope="run", text=text) for name, rule in rules.run.items() for text in rule(evidence)
    ]
    verdicts = [check_cell(evidence, cell_id, run_problems, rules) for cell_id in dict.fromkeys(run.planned_cells)]
    verdicts += [plan_exclusion(evidence, cell_id, reason) for cell_id, reason in run.excluded_cells.items()]
    verdicts += [selected_but_absent(evidence, cell_id) for cell_id in missing_selection(evidence)]
    absent = plan.absent(run) if plan is not None and not plan.error else []
    return RunVerdict(
        run_dir=str(run_dir),
        run_id=run.run_id,
        format_version=run.format_version,
        cells=verdicts,
        run_problems=run_problems,
        absent=absent,
        notes=commit_notes(evidence) + author_notes(evidence),
    )


def missing_selection(ev: RunEvidence) -> list[str]:
    """The cells the recomputed selection holds that the run does not list at all."""
    listed = set(ev.run.planned_cells) | set(ev.run.excluded_cells)
    return [cell.id for cell in ev.plan.planned if cell.id not in listed] if ev.plan and not ev.plan.error else []


def selected_but_absent(ev: RunEvidence, cell_id: str) -> CellVerdict:
    """A cell the run's own selection (--only, --shard) holds, missing from the bundle: INVALID."""
    problem = Problem(
        rule="plan-recomputed",
        scope="cell",
        cell=cell_id,
        text="selected by the run's recomputed plan, but absent from the bundle",
    )
    return CellVerdict(
        run_id=ev.run.run_id, cell_id=cell_id, verdict="INVALID", reasons=[problem.text], problems=[problem]
    )


def plan_exclusion(ev: RunEvidence, cell_id: str, reason: str) -> CellVerdict:
    """A cell the plan excluded: EXCLUDED when the recomputed plan excludes it too, by the kind
    the run recorded (an author's exclusion is one the embedded matrix makes)."""
    plan = ev.plan
    recomputed = plan is not None and not plan.error
    problem = None
    if recomputed and cell_id not in plan.excluded:  # type: ignore[union-attr]
        problem = Problem(
            rule="plan-recomputed",
            scope="cell",
            cell=cell_id,
            text="listed as excluded, but the recomputed plan does not exclude it",
        )
    recorded, planned = ev.run.excluded_kinds.get(cell_id), plan.excluded_kinds.get(cell_id) if recomputed else None  # type: ignore[union-attr]
    if problem is None and recorded and planned and recorded != planned:
        text = f"recorded as {exclusion_label(recorded)}, but the recomputed plan says {exclusion_label(planned)}"
        problem = Problem(rule="exclusion-kind", scope="cell", cell=cell_id, text=text)
    if problem is not None:
        return CellVerdict(
            run_id=ev.run.run_id, cell_id=cell_id, verdict="INVALID", reasons=[problem.text], problems=[problem]
        )
    kind = recorded or planned or kind_from_text(reason) or "unknown"
    return CellVerdict(run_id=ev.run.run_id, cell_id=cell_id, verdict="EXCLUDED", reasons=[reason], kind=kind)


def check_cell(run_evidence: RunEvidence, cell_id: str, run_problems: list[Problem], rules: Rules) -> CellVerdict:
    run, bundle = run_evidence.run, run_evidence.bundle
    others = [f"{CELLS_DIR}/{other}" for other in run.planned_cells if other != cell_id]
    # another cell's file is that cell's problem
    problems = [p for p in run_problems if not any(p.text.startswith((f"{o}/", f"{o}:")) for o in others)]
    try:
        record = bundle.cell(cell_id)
        suite = suite_evidence(bundle, run, record.cell.suite.id)
    except BadInput as error:
        problems.append(
            Problem(rule="cell-intact", scope="cell", cell=cell_id, text=f"cell missing or unreadable: {error}")
        )
        return verdict_of(run, cell_id, problems, None)
    evidence = CellEvidence(
        **dict(run_evidence), cell_id=cell_id, cell_dir=bundle.cell_dir(cell_id), record=record, **suite
    )
    chosen = dict(rules.every_cell) | (rules.ran_cell if record.status == "done" else {})
    # a kind with rules of its own (an external harness's raw outputs)
    kind_rules = kind_of(record.cell.suite).check_rules
    if kind_rules is not None:
        chosen = load_object(kind_rules)(chosen, ran=record.status == "done", tools=CHECK_TOOLS)
    found, unchecked, notes = applied(chosen, evidence)
    return verdict_of(run, cell_id, problems + found, record, unchecked).model_copy(update={"notes": notes})


def suite_evidence(bundle: BundleReader, run: RunRecord, suite_id: str) -> dict:
    """The cell's suite files for its evidence: the bundle's copy or the referenced files resolved,
    or why they are not at hand (the rules that read them are then UNCHECKED)."""
    try:
        return {"suite_path": suite_root(bundle, run, suite_id)}
    except NotAtHand as missing:
        return {"suite_path": None, "suite_missing": str(missing)}


def applied(chosen: dict[str, CellRule], evidence: CellEvidence) -> tuple[list[Problem], list[Problem], list[str]]:
    """The problems the rules find, what they could not look at (a rule that raised NotAtHand),
    each once, and what they took on the bundle's word (`Noted`)."""
    problems: list[Problem] = []
    unchecked: dict[str, Problem] = {}
    notes: list[str] = []
    for name, rule in chosen.items():
        try:
            found = rule(evidence)
        except NotAtHand as missing:
            unchecked.setdefault(
                str(missing), Problem(rule=name, scope="cell", cell=evidence.cell_id, text=f"not checked: {missing}")
            )
            continue
        notes += [f"{name}: {text.strip()}" for text in found if isinstance(text, Noted)]
        problems += [
            Problem(rule=name, scope="cell", cell=evidence.cell_id, text=text.strip())
            for text in found
            if not isinstance(text, Noted)
        ]
    return problems, list(unchecked.values()), notes


def verdict_of(
    run: RunRecord,
    cell_id: str,
    problems: list[Problem],
    record: CellRecord | None,
    unchecked: list[Problem] | None = None,
) -> CellVerdict:
    """INVALID on any problem, else UNCHECKED when a rule could not look, else VALID (or EXCLUDED)."""
    # an older bundle records none: its evidence says
    kind = (record.exclusion_kind or record.evidenced_kind) if record is not None else None
    unchecked = unchecked or []
    if record is not None and record.status == "excluded" and not problems and not unchecked:
        return CellVerdict(
            run_id=run.run_id, cell_id=cell_id, verdict="EXCLUDED", reasons=[record.reason or "excluded"], kind=kind
        )
    verdict: Verdict = "INVALID" if problems else "UNCHECKED" if unchecked else "VALID"
    reasons = [p.text for p in problems + unchecked]
    return CellVerdict(
        run_id=run.run_id,
        cell_id=cell_id,
        verdict=verdict,
        reasons=reasons,
        problems=problems,
        unchecked=unchecked,
        kind=kind,
    )


EXIT_UNCHECKED = 3  # a cell could not be judged here (NotAtHand) and none is INVALID


def exit_status(verdicts: list[RunVerdict], failed: bool = False) -> int:
    """The exit a judgement of these runs gives (`repro check`, the exports): 1 a run failed (an
    INVALID cell, a run-level problem, or `failed`: a broken merge), EXIT_UNCHECKED a cell
    UNCHECKED and none INVALID, else 0."""
    if failed or any(run.failed for run in verdicts):
        return 1
    return EXIT_UNCHECKED if any(run.unchecked for run in verdicts) else 0
