"""`repro check`: which cells of a bundle are clean-room, decided from the bundle alone.

A cell is VALID only when every rule holds; EXCLUDED when it was excluded with a recorded
reason (by the plan or the latency gate); INVALID otherwise, with every problem. Tables are
rendered from VALID cells only.

The rules live in a table keyed by the bundle's `format_version` (the MLPerf submission checker
keeps its rules the same way): a bundle is checked by the rules of the format it declares, and a
format this version of repro does not know is refused. Each problem is a typed record naming the
rule that caught it.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from harness.contracts import SandboxAudit
from repro.bundle.layout import CELLS_DIR, MATRIX_COPY, SUITES_DIR, BundleReader, safe_id
from repro.bundle.records import FORMAT_VERSION, CellRecord, CellSummary, Execution, RunRecord
from repro.bundle.redact import Redactor, find_leaks, suite_data_homes  # suite_data_homes: read within bounds, once per check
from repro.check.bounds import rule_bounds
from repro.check.commit import commit_notes, rule_matrix_at_commit, rule_profile_at_commit, rule_suite_at_commit
from repro.check.cross import ENGINE_LOG, rule_evidence, rule_gate_group, rule_gate_settings, rule_identity_cross_check
from repro.check.templates import boot_exclusion_evidenced, rule_chat_template, rule_template_facts
from repro.containers.sandbox import hardening_problems
from repro.core.errors import BadInput
from repro.core.files import MAX_LOG_BYTES
from repro.engines.gate import rejudge
from repro.plan.planner import Cell, make_plan, parse_shard, select_cells, shard_cells
from repro.spec.matrix import LatencyGateSettings, ModelSpec, load_matrix
from repro.suites.selection import select

Verdict = Literal["VALID", "INVALID", "EXCLUDED"]
Scope = Literal["run", "cell"]
HEX64 = re.compile(r"^[0-9a-f]{64}$")
MODEL_OUTPUT_FILES = frozenset({"scenarios.jsonl", "transcripts.jsonl"})  # what the harness recorded of the model


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


class AbsentCell(BaseModel):
    """A cell the matrix plans on this profile that the run did not select, and why."""

    cell_id: str
    reason: str


class RunVerdict(BaseModel):
    run_dir: str
    run_id: str
    format_version: int
    cells: list[CellVerdict]
    run_problems: list[Problem] = []
    absent: list[AbsentCell] = []  # planned on the profile, left out by --only or --shard
    notes: list[str] = []  # what could not be compared (the project's files at the commit), never a problem
    signer: str | None = None  # with --allowed-signers: who signed the bundle (repro.bundle.signing)

    @property
    def invalid(self) -> list[CellVerdict]:
        return [cell for cell in self.cells if cell.verdict == "INVALID"]

    @property
    def failed(self) -> bool:
        """An INVALID cell or a run-level problem (a run may have no cell left to carry it)."""
        return bool(self.invalid or self.run_problems)


class RecomputedPlan(BaseModel):
    """The run's plan as the embedded matrix gives it, or why it could not be recomputed."""

    planned: list[Cell] = []  # the run's selection: --only, then --shard
    whole: list[Cell] = []  # every runnable cell of the plan on this profile
    excluded: dict[str, str] = {}
    latency_gate: LatencyGateSettings | None = None
    models: list[ModelSpec] = []  # the embedded matrix's models (their chat templates are checked)
    error: str | None = None

    @classmethod
    def of(cls, run: RunRecord, bundle: BundleReader) -> RecomputedPlan:
        try:
            loaded = load_matrix(bundle.matrix_path(), embedded=True)
            if loaded.sha256 != run.matrix.sha256:
                return cls(error=f"{MATRIX_COPY} is not the matrix the run names (sha256 {loaded.sha256[:12]}, recorded {run.matrix.sha256[:12]})")
            plan = make_plan(loaded, run.profile, run.profile_settings, templates=run.chat_templates)
            cells = shard_cells(select_cells(plan, run.only), parse_shard(run.shard) if run.shard else None)
        except BadInput as error:
            return cls(error=f"the plan cannot be recomputed from {MATRIX_COPY}: {error}")
        first_shard = run.shard is None or run.shard.startswith("1/")
        excluded = {c.id: c.excluded or "excluded" for c in plan.excluded} if first_shard else {}
        return cls(planned=cells, whole=plan.cells, excluded=excluded, latency_gate=loaded.matrix.latency_gate, models=list(loaded.matrix.models))

    def absent(self, run: RunRecord) -> list[AbsentCell]:
        """The plan's cells the run's selection leaves out, each with the option that left it out."""
        selected = {cell.id for cell in self.planned}
        return [AbsentCell(cell_id=cell.id, reason=absence_reason(run, cell.id)) for cell in self.whole if cell.id not in selected]


def absence_reason(run: RunRecord, cell_id: str) -> str:
    if run.only and cell_id not in run.only:
        return f"not selected: the run ran --only {len(run.only)} cell(s)"
    return f"in another shard: this bundle is shard {run.shard}"


class RunEvidence(BaseModel):
    """What the run rules read: the parsed run record, the bundle's reader, and the host's redactor."""

    model_config = {"arbitrary_types_allowed": True}

    run: RunRecord
    bundle: BundleReader
    redactor: Redactor
    plan: RecomputedPlan | None = None  # format 3: the plan recomputed from the embedded matrix


class CellEvidence(RunEvidence):
    """What the cell rules read: the run's evidence, the cell's id, its folder (for the bundle
    lint), its parsed record and its suite's embedded copy."""

    cell_id: str
    cell_dir: Path
    record: CellRecord
    suite_dir: Path


RunRule = Callable[[RunEvidence], list[str]]
CellRule = Callable[[CellEvidence], list[str]]


# ---------------------------------------------------------------- run rules


def rule_provenance(ev: RunEvidence) -> list[str]:
    run = ev.run
    problems = []
    if not HEX64.match(run.matrix.sha256 or ""):
        problems.append("matrix file sha256 not recorded")
    if not run.source.commit:
        problems.append("project commit not recorded")
    if not run.source.tree_clean or run.source.dirty_files:
        problems.append(f"project tree was dirty at run time ({', '.join(run.source.dirty_files[:3]) or 'unknown files'})")
    return problems


def rule_run_complete(ev: RunEvidence) -> list[str]:
    run = ev.run
    problems = [] if run.status == "complete" else [f"run status is {run.status}, not complete"]
    if run.leaked_containers:
        problems.append(f"containers left behind: {', '.join(run.leaked_containers)}")
    return problems


def rule_manifest(ev: RunEvidence) -> list[str]:
    return ev.bundle.manifest_problems()


def rule_plan_listing(ev: RunEvidence) -> list[str]:
    """Every planned cell once; a cell is planned or excluded, never both; ids are safe."""
    run = ev.run
    problems = [f"cell {cell_id} is listed {n} times in planned_cells" for cell_id, n in Counter(run.planned_cells).items() if n > 1]
    problems += [f"cell {cell_id} is both planned and excluded" for cell_id in set(run.planned_cells) & set(run.excluded_cells)]
    for cell_id in [*run.planned_cells, *run.excluded_cells]:
        try:
            safe_id(cell_id, "cell id")
        except BadInput as error:
            problems.append(str(error))
    problems += [f"{CELLS_DIR}/{name} is not a planned cell" for name in ev.bundle.stray_cells()]
    return problems


def rule_plan_recomputed(ev: RunEvidence) -> list[str]:
    """planned_cells and excluded_cells are exactly what the embedded matrix gives for this
    profile, --only selection and shard: no cell added, dropped or moved out of the plan."""
    plan = ev.plan
    if plan is None:
        return [f"{MATRIX_COPY} missing: the plan cannot be recomputed"]
    if plan.error:
        return [plan.error]
    expected = [cell.id for cell in plan.planned]
    problems = []
    if ev.run.planned_cells != expected:
        missing = [c for c in expected if c not in ev.run.planned_cells]
        extra = [c for c in ev.run.planned_cells if c not in expected]
        problems.append(f"planned_cells differ from the recomputed plan (missing {missing[:2]}, not in the plan {extra[:2]})")
    if set(ev.run.excluded_cells) != set(plan.excluded):
        problems.append("excluded_cells differ from the recomputed plan's exclusions")
    return problems


def rule_no_host_identity(ev: RunEvidence) -> list[str]:
    text = ev.bundle.run_text()
    return [f"host identity left in run.json: {leak}" for leak in sorted(set(ev.redactor.leaks(text)))]


# ---------------------------------------------------------------- cell rules


def rule_cell_intact(ev: CellEvidence) -> list[str]:
    problems = [f"{CELLS_DIR}/{ev.cell_id}: {problem}" for problem in ev.bundle.cell_problems(ev.cell_id)]
    if ev.record.cell.id != ev.cell_id:
        problems.append(f"cell.json names cell {ev.record.cell.id}, its folder is {ev.cell_id}")
    return problems


def rule_cell_status(ev: CellEvidence) -> list[str]:
    record = ev.record
    if record.status == "error":
        return [f"cell error: {record.reason}"]
    if record.status == "excluded" and not record.reason:
        return ["excluded without a recorded reason"]
    return []


def rule_images(ev: CellEvidence) -> list[str]:
    problems = []
    engine, harness = ev.record.engine_image, ev.record.harness_image
    if engine is None or not engine.id:
        problems.append("engine image id not recorded")
    elif engine.pinned_by == "digest" and "@sha256:" not in engine.reference:
        problems.append(f"engine image {engine.reference} is not pinned by digest")
    elif engine.pinned_by == "content-key" and not (engine.key and engine.labels.get("repro.key") == engine.key):
        problems.append("engine image content key not recorded on the image")
    if harness is None or not harness.id:
        problems.append("harness image id not recorded")
    elif harness.labels.get("repro.harness_tree") != ev.run.source.harness_digest:
        problems.append("harness image was not built from the recorded commit's harness source")
    return problems


def rule_model_and_engine(ev: CellEvidence) -> list[str]:
    problems = []
    record = ev.record
    if record.model_sha256_verified != record.cell.model.sha256:
        problems.append("model sha256 not verified against the pin")
    identity = record.engine_identity
    expected = record.cell.engine.expected_identity()
    if identity is None or not identity.matched or identity.reported != expected or identity.expected != expected:
        reported = identity.reported if identity else None
        problems.append(f"engine identity did not match the pin (expected {expected}, reported {reported})")
    return problems


def rule_cell_as_planned(ev: CellEvidence) -> list[str]:
    """The cell's record describes the cell the recomputed plan has under its id (model pin,
    engine, protocol, suite, decoding): an id cannot be kept while its content is changed."""
    planned = {cell.id: cell for cell in ev.plan.planned} if ev.plan and not ev.plan.error else {}
    cell = planned.get(ev.cell_id)
    if cell is None:
        return []  # plan-recomputed names the run-level problem
    if ev.record.cell.model_dump(mode="json") != cell.model_dump(mode="json"):
        return ["the cell's record differs from the plan's cell of that id (model, engine, protocol, suite or decoding)"]
    return []


def rule_sandbox(ev: CellEvidence) -> list[str]:
    """The hardening read back from Docker, checked against what each role requires."""
    problems = []
    for role in ("harness", "engine"):
        settings = getattr(ev.record.sandbox, role)
        if settings is None:
            problems.append(f"{role} sandbox settings not recorded")
            continue
        problems += [f"{role} sandbox: {problem}" for problem in hardening_problems(settings, role)]
    return problems


def rule_sandbox_audit(ev: CellEvidence) -> list[str]:
    """The audit from inside, with the harness settings: every escape tried, and every one failed."""
    return audit_problems(ev.record.sandbox_audit, "sandbox audit")


def rule_engine_audit(ev: CellEvidence) -> list[str]:
    """The audit with the engine's settings (its memory limit read, not exceeded): every escape
    tried, and every one failed."""
    return audit_problems(ev.record.engine_audit, "engine sandbox audit")


def audit_problems(audit: SandboxAudit | None, what: str) -> list[str]:
    """One problem per escape not both tried and blocked, or why there is no audit to read."""
    if audit is None:
        return [f"{what} not recorded"]
    if audit.error:
        return [f"{what} failed: {audit.error}"]
    return [f"{what}: {item.name} {'was not blocked' if item.attempted else 'was not tried'} ({item.detail})" for item in audit.escapes()]


def rule_hardware(ev: CellEvidence) -> list[str]:
    record, run = ev.record, ev.run
    if record.cell.profile != run.profile:
        return [f"cell planned for profile {record.cell.profile}, run on {run.profile}"]
    if not run.profile_settings.accelerator_matches(record.accelerator):
        return [f"accelerator {record.accelerator!r} does not match profile {run.profile} ({run.profile_settings.accelerator})"]
    return []


ENGINE_THREADS = re.compile(rb"n_threads = (\d+)")  # llama.cpp's "llama threadpool init, n_threads = 2"


def rule_execution(ev: CellEvidence) -> list[str]:
    """Threads per engine pinned by the profile (part of a result's identity on CPU); the recorded
    execution, the engine's reported slots and the thread count in its own log all agree with it."""
    profile, name = ev.run.profile_settings, ev.run.profile
    problems = []
    if profile.threads is None:
        problems.append(f"profile {name} pins no thread count, so the result depends on the machine's cores")
    recorded = ev.record.execution
    if recorded is not None and (recorded.threads, recorded.slots, recorded.cache_prompt) != (profile.threads, profile.slots, profile.cache_prompt):
        problems.append(f"execution recorded as {recorded.label()}, but profile {name} sets {Execution.of(profile, 1).label()}")
    slots = ev.record.engine_settings.reported.get("total_slots")
    if slots is not None and slots != profile.slots:
        problems.append(f"the engine reports {slots} slot(s), profile {name} sets {profile.slots}")
    logged = sorted(set(engine_log_threads(ev)))
    if profile.threads is not None and logged and logged != [profile.threads]:
        problems.append(f"the engine log shows n_threads = {', '.join(map(str, logged))}, profile {name} sets {profile.threads}")
    return problems


def engine_log_threads(ev: CellEvidence) -> list[int]:
    """Every thread count llama.cpp logged at start (one per replica); none for other engines."""
    try:
        text = ev.bundle.cell_file(ev.cell_id, ENGINE_LOG, MAX_LOG_BYTES)
    except BadInput:
        return []
    return [int(found) for found in ENGINE_THREADS.findall(text)]


def rule_gate(ev: CellEvidence) -> list[str]:
    gate = ev.record.gate
    if gate is None:
        return ["latency gate result not recorded"]
    if not gate.passed:
        return [f"latency gate failed but the cell was not excluded ({gate.reason})"]
    return []


def rule_gate_recomputed(ev: CellEvidence) -> list[str]:
    """The recorded attempts pass the gate again, under the profile's thresholds and the embedded
    matrix's settings: a gate result is never taken on its word."""
    settings = ev.plan.latency_gate if ev.plan else None
    if settings is None or ev.record.gate is None:
        return []  # plan-recomputed and gate name these
    if rejudge(ev.record.gate, ev.run.profile_settings, settings) is False:
        return ["the recorded gate attempts do not pass the gate the profile and matrix set"]
    return []


def rule_exclusion_evidenced(ev: CellEvidence) -> list[str]:
    """A cell the run excluded carries a gate whose recorded attempts really fail."""
    if ev.record.status != "excluded":
        return []
    if boot_exclusion_evidenced(ev):
        return []
    settings = ev.plan.latency_gate if ev.plan else None
    if ev.record.gate is None or settings is None:
        return ["excluded without a recorded latency gate"]
    verdict = rejudge(ev.record.gate, ev.run.profile_settings, settings)
    if verdict is None:
        return ["excluded by a latency gate the matrix turns off"]
    return ["excluded, but its recorded gate attempts pass the gate"] if verdict else []


def rule_summary_recomputed(ev: CellEvidence) -> list[str]:
    """The recorded summary must equal the one recomputed from scenarios.jsonl; no engine faults."""
    try:
        results = ev.bundle.results(ev.cell_id)
    except BadInput as error:
        return [str(error)]
    recorded = ev.record.summary
    if recorded is None:
        return ["no scenario summary recorded"]
    problems = []
    recomputed = CellSummary.of(results)
    if recorded != recomputed:
        problems.append(f"recorded summary {recorded.passed}/{recorded.total} differs from scenarios.jsonl ({recomputed.passed}/{recomputed.total})")
    if [r.id for r in results] != ev.record.suite_ids:
        problems.append("scenarios.jsonl does not hold exactly the suite's scenarios, in order")
    if recomputed.engine_faults:
        problems.append(f"{recomputed.engine_faults} scenarios hit engine errors (not model failures; rerun the cell)")
    return problems


def rule_suite_recomputed(ev: CellEvidence) -> list[str]:
    """The scenarios the cell ran are the embedded suite's: its ids (once each, in order), its
    sha256, and each result's category and level as the scenario files give them."""
    suite = ev.record.cell.suite
    try:
        selection = select(suite.model_copy(update={"path": "scenarios", "source": None}), root=ev.suite_dir)
    except BadInput as error:
        return [f"the suite cannot be recomputed from {SUITES_DIR}/{suite.id}: {error}"]
    problems = []
    if selection.sha256 != ev.record.suite_sha256:
        problems.append(f"suite sha256 {str(ev.record.suite_sha256)[:12]} is not the embedded suite's ({selection.sha256[:12]})")
    if suite.sha256 is not None and selection.sha256 != suite.sha256:
        problems.append(f"the embedded suite hashes to {selection.sha256[:12]}, the matrix pins {suite.sha256[:12]}")
    if ev.record.suite_ids != selection.ids:
        problems.append("suite_ids are not the embedded suite's scenarios, once each, in order")
    try:
        results = ev.bundle.results(ev.cell_id)
    except BadInput:
        return problems  # the summary rule names it
    wrong = [r.id for r in results if selection.categories.get(r.id) != r.category]
    problems += [f"scenario {wrong[0]} is recorded in another category than its file's"] if wrong else []
    return problems


@contextmanager
def bundle_fixtures(folder: Path) -> Iterator[None]:
    """The harness reads fixtures from the bundle's copy while re-grading, never from a folder
    the host's HARNESS_FIXTURES names."""
    from harness.fixtures import FIXTURES_ENV

    before = os.environ.get(FIXTURES_ENV)
    os.environ[FIXTURES_ENV] = str(folder)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(FIXTURES_ENV, None)
        else:
            os.environ[FIXTURES_ENV] = before


def rule_regraded(ev: CellEvidence) -> list[str]:
    """Every scenario re-grades: each recorded raw reply, parsed again by the cell's protocol, gives
    the recorded step (call, thought), validity and reject code; the first prompt is rebuilt from
    the embedded scenario; and the steps, executed again against the embedded scenario
    (harness.regrade), give the recorded tool results, outcome, failure and score."""
    from harness.regrade import Replay, regrade_all
    from harness.scenario import ScenarioError, load_scenarios

    cell = ev.record.cell
    copy = ev.suite_dir
    replay = Replay(protocol=cell.protocol, max_tokens=cell.decoding.max_tokens)
    try:
        with bundle_fixtures(copy / "fixtures"):
            report = regrade_all(load_scenarios(copy / "scenarios"), ev.bundle.results(ev.cell_id), ev.bundle.transcripts(ev.cell_id), replay)
    except (BadInput, ScenarioError) as error:
        return [f"cannot re-grade: {error}"]
    lines = report.lines()
    return [f"{len(lines)} scenario(s) do not re-grade from their transcripts; first: {lines[0]}"] if lines else []


def rule_results_consistent(ev: CellEvidence) -> list[str]:
    """Each result line agrees with itself: a pass has no failure type, no failed check and no
    engine fault; a failure names its type. (A run that ended early, stuck or at the step limit
    still passes when every check holds, so the status is not part of this.)"""
    try:
        results = ev.bundle.results(ev.cell_id)
    except BadInput:
        return []  # the summary rule names it
    bad = [r.id for r in results if r.passed != (r.failure_type is None and not r.failed_checks and not r.engine_fault)]
    return [f"scenario {bad[0]}: passed does not follow from its status, failure type and failed checks ({len(bad)} such lines)"] if bad else []


def rule_cell_no_host_identity(ev: CellEvidence) -> list[str]:
    """No host path, user or host name in the cell's files. A home folder the embedded suite
    itself names (a fixture's fictional /home/mira/...) is scenario data, not a host's; in what
    the model wrote (results and transcripts) only this host's own identity counts, since a model
    may name any home and its container saw none of the host's."""
    data = suite_data_homes(ev.suite_dir) if ev.plan is not None else frozenset()
    leaks = find_leaks(ev.cell_dir, ev.redactor, data, model_output=MODEL_OUTPUT_FILES)
    return [f"host identity left in cells/{ev.cell_id}/{line}" for line in leaks][:5]


class Rules(BaseModel):
    """The rules of one bundle format: run-level, every cell, and cells that ran (status done)."""

    model_config = {"arbitrary_types_allowed": True}

    run: dict[str, RunRule]
    every_cell: dict[str, CellRule]
    ran_cell: dict[str, CellRule]


# The rules of every format; format 3 adds the recomputations from the embedded matrix and suites.
BASE_RULES = Rules(
    run={
        "provenance": rule_provenance,
        "run-complete": rule_run_complete,
        "manifest": rule_manifest,
        "plan-listing": rule_plan_listing,
        "host-identity": rule_no_host_identity,
    },
    every_cell={"cell-intact": rule_cell_intact, "cell-status": rule_cell_status, "host-identity": rule_cell_no_host_identity},
    ran_cell={
        "images": rule_images,
        "model-and-engine": rule_model_and_engine,
        "sandbox": rule_sandbox,
        "sandbox-audit": rule_sandbox_audit,
        "hardware": rule_hardware,
        "gate": rule_gate,
        "summary": rule_summary_recomputed,
    },
)
RULES_V3 = Rules(
    run={**BASE_RULES.run, "plan-recomputed": rule_plan_recomputed},
    every_cell={**BASE_RULES.every_cell, "exclusion-evidenced": rule_exclusion_evidenced},
    ran_cell={
        **BASE_RULES.ran_cell,
        "cell-as-planned": rule_cell_as_planned,
        "suite-recomputed": rule_suite_recomputed,
        "results-consistent": rule_results_consistent,
        "gate-recomputed": rule_gate_recomputed,
        "regraded": rule_regraded,
    },
)
RULES_V4 = Rules(
    run=RULES_V3.run, every_cell=RULES_V3.every_cell, ran_cell={**RULES_V3.ran_cell, "engine-audit": rule_engine_audit, "execution": rule_execution}
)
RULES_V5 = Rules(
    run={
        **RULES_V4.run,
        "chat-template-facts": rule_template_facts,
        "profile-at-commit": rule_profile_at_commit,
        "matrix-at-commit": rule_matrix_at_commit,
    },
    every_cell={**RULES_V4.every_cell, "gate-settings": rule_gate_settings, "gate-group": rule_gate_group},
    ran_cell={
        **RULES_V4.ran_cell,
        "chat-template": rule_chat_template,
        "evidence": rule_evidence,
        "identity-cross-check": rule_identity_cross_check,
        "bounds": rule_bounds,
        "suite-at-commit": rule_suite_at_commit,
    },
)
# Formats 2 (no embedded matrix or suites), 3 (no engine audit, no execution record) and 4 (no
# chat template record: a built-in fallback template cannot be told from the model's own) are
# retired: a bundle relabelled to any of them would escape what it lacks, and no bundle of them
# was published.
RULES: dict[int, Rules] = {FORMAT_VERSION: RULES_V5}


# ---------------------------------------------------------------- checking


def rules_for(run: RunRecord, run_dir: Path) -> Rules:
    rules = RULES.get(run.format_version)
    if rules is None:
        known = ", ".join(str(v) for v in sorted(RULES))
        raise BadInput(f"{run_dir}: bundle format {run.format_version} is not one this repro checks (known: {known})")
    return rules


def check_run(run_dir: Path, redactor: Redactor | None = None) -> RunVerdict:
    bundle = BundleReader(run_dir)
    run = bundle.run()
    rules = rules_for(run, run_dir)
    plan = RecomputedPlan.of(run, bundle) if run.format_version >= 3 else None
    evidence = RunEvidence(run=run, bundle=bundle, redactor=redactor or Redactor(), plan=plan)
    run_problems = [Problem(rule=name, scope="run", text=text) for name, rule in rules.run.items() for text in rule(evidence)]
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
        notes=commit_notes(evidence),
    )


def missing_selection(ev: RunEvidence) -> list[str]:
    """The cells the recomputed selection holds that the run does not list at all."""
    listed = set(ev.run.planned_cells) | set(ev.run.excluded_cells)
    return [cell.id for cell in ev.plan.planned if cell.id not in listed] if ev.plan and not ev.plan.error else []


def selected_but_absent(ev: RunEvidence, cell_id: str) -> CellVerdict:
    """A cell the run's own selection (--only, --shard) holds, missing from the bundle: INVALID."""
    problem = Problem(rule="plan-recomputed", scope="cell", cell=cell_id, text="selected by the run's recomputed plan, but absent from the bundle")
    return CellVerdict(run_id=ev.run.run_id, cell_id=cell_id, verdict="INVALID", reasons=[problem.text], problems=[problem])


def plan_exclusion(ev: RunEvidence, cell_id: str, reason: str) -> CellVerdict:
    """A cell the plan excluded: EXCLUDED when the recomputed plan excludes it too."""
    plan = ev.plan
    if plan is not None and not plan.error and cell_id not in plan.excluded:
        problem = Problem(rule="plan-recomputed", scope="cell", cell=cell_id, text="listed as excluded, but the recomputed plan does not exclude it")
        return CellVerdict(run_id=ev.run.run_id, cell_id=cell_id, verdict="INVALID", reasons=[problem.text], problems=[problem])
    return CellVerdict(run_id=ev.run.run_id, cell_id=cell_id, verdict="EXCLUDED", reasons=[reason])


def check_cell(run_evidence: RunEvidence, cell_id: str, run_problems: list[Problem], rules: Rules) -> CellVerdict:
    run, bundle = run_evidence.run, run_evidence.bundle
    others = [f"{CELLS_DIR}/{other}" for other in run.planned_cells if other != cell_id]
    problems = [p for p in run_problems if not any(p.text.startswith((f"{o}/", f"{o}:")) for o in others)]  # another cell's file is that cell's problem
    try:
        record = bundle.cell(cell_id)
        suite_dir = bundle.suite_dir(record.cell.suite.id)
    except BadInput as error:
        problems.append(Problem(rule="cell-intact", scope="cell", cell=cell_id, text=f"cell missing or unreadable: {error}"))
        return verdict_of(run, cell_id, problems, None)
    evidence = CellEvidence(**dict(run_evidence), cell_id=cell_id, cell_dir=bundle.cell_dir(cell_id), record=record, suite_dir=suite_dir)
    chosen = dict(rules.every_cell) | (rules.ran_cell if record.status == "done" else {})
    if record.cell.suite.external is not None:  # another project's harness: its own rules (repro.suites.external.check)
        from repro.suites.external.check import external_rules

        chosen = external_rules(chosen, ran=record.status == "done")
    problems += [Problem(rule=name, scope="cell", cell=cell_id, text=text.strip()) for name, rule in chosen.items() for text in rule(evidence)]
    return verdict_of(run, cell_id, problems, record)


def verdict_of(run: RunRecord, cell_id: str, problems: list[Problem], record: CellRecord | None) -> CellVerdict:
    if record is not None and record.status == "excluded" and not problems:
        return CellVerdict(run_id=run.run_id, cell_id=cell_id, verdict="EXCLUDED", reasons=[record.reason or "excluded"])
    verdict: Verdict = "INVALID" if problems else "VALID"
    return CellVerdict(run_id=run.run_id, cell_id=cell_id, verdict=verdict, reasons=[p.text for p in problems], problems=problems)
