"""`repro verify RUN --claims FILE`: each claim of a claims file answered from a rerun.

Per claim, one verdict:

- REPRODUCED: the rerun has the claim's outcomes, scenario by scenario (and, where both sides
  carry them, identical transcripts);
- CONSISTENT: the outcomes differ, within the tolerance (an exact test at a stated level, or the
  claim's own "within k");
- DIFFERENT: outside it;
- NOT RERUN: no VALID rerun row for the claim, with the reason (the model's bytes are not pinned
  or not in the rerun's matrix, another harness or protocol, an excluded or absent cell and its
  reason).

A claim is matched to a rerun row by what the claim is about: the model's bytes (sha256: a name
proves nothing), the harness, the protocol and the suite's id. Everything else that was pinned
(engine and build, quant, file size, chat template, decoding, context, harness version, suite
version, hardware, threads) is compared, and every difference is named beside the verdict: a
CONSISTENT verdict over another thread count says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from repro.bundle.layout import BundleReader, find_runs
from repro.bundle.records import RunRecord
from repro.core.errors import BadInput
from repro.plan.planner import Cell, make_plan
from repro.report.aggregate import PaperTables, TableRow, ValidCell, collect_with_cells
from repro.report.tolerance import Judgement, judge_counts, judge_paired
from repro.report.verify import TranscriptIdentity, load_published
from repro.spec.claims import (
    Claim,
    ClaimDecoding,
    ClaimEngine,
    ClaimHardware,
    ClaimHarness,
    ClaimModel,
    ClaimResult,
    ClaimsFile,
    ClaimSuite,
    ClaimTemplate,
    Count,
    LoadedClaims,
    ScenarioOutcome,
    Setup,
    Source,
)
from repro.spec.matrix import Decoding, load_matrix
from repro.spec.tolerance import Tolerance

Verdict = Literal["REPRODUCED", "CONSISTENT", "DIFFERENT", "NOT RERUN"]
PASSING: tuple[Verdict, ...] = ("REPRODUCED", "CONSISTENT")
MAX_LISTED = 20  # flips and differing transcripts named per claim; the counts say how many more


# ---------------------------------------------------------------- the rerun, as facts


class HarnessFacts(BaseModel):
    name: str
    version: str | None = None
    commit: str | None = None
    archive_sha256: str | None = None


class RerunRow(BaseModel):
    """A VALID rerun row with the pinned inputs a claim is compared on."""

    row: TableRow
    file_size: int | None  # the GGUF's bytes, as the matrix pins them (None from a results.json, which rounds to 0.1 MiB)
    harness: HarnessFacts
    engine_kind: str
    engine_names: list[str]  # what a claim's build may call this engine: identity, label, build commit
    variant: str
    accelerator: str | None
    decoding: Decoding
    profile_tolerance: Tolerance | None = None


class Rerun(BaseModel):
    """The rerun's rows, and what its plans hold that did not become a row (for NOT RERUN)."""

    rows: list[RerunRow]
    planned: list[Cell] = []  # every cell of every run's plan, runnable and excluded
    reasons: dict[str, list[str]] = {}  # cell id -> why it is no row (excluded, invalid, absent)
    runs: list[str] = []


def load_rerun(paths: list[Path]) -> Rerun:
    """The VALID rows of the rerun (as `repro paper render` builds them), each with its facts."""
    tables, cells = collect_with_cells(paths)
    records: dict[str, RunRecord] = {}
    planned: list[Cell] = []
    for path in paths:
        for run_dir in find_runs(path):
            bundle = BundleReader(run_dir)
            record = bundle.run()
            records[record.run_id] = record
            planned += _plan_cells(bundle, record)
    rows = [rerun_row(row, cells.get(row.key, []), records) for row in tables.rows]
    return Rerun(rows=[r for r in rows if r is not None], planned=planned, reasons=_no_row_reasons(tables), runs=tables.runs)


def load_published_rows(path: Path, harness: HarnessFacts, engine_kind: str) -> Rerun:
    """The rows of a results.json (no bundle at hand): what it records, plus the harness and
    engine kind it does not, as the publisher states them."""
    tables = load_published(path)
    return Rerun(rows=[published_row(row, harness, engine_kind) for row in tables.rows], reasons=_no_row_reasons(tables), runs=tables.runs)


def published_row(row: TableRow, harness: HarnessFacts, engine_kind: str) -> RerunRow:
    """A results.json row as facts: its decoding read back from its label (t=0 seed=42 max_tokens=384 ctx=4096)."""
    parts = dict(part.split("=", 1) for part in row.decoding.split() if "=" in part)
    try:
        decoding = Decoding(temperature=float(parts["t"]), seed=int(parts["seed"]), max_tokens=int(parts["max_tokens"]), context=int(parts["ctx"]))
    except (KeyError, ValueError) as error:
        raise BadInput(f"row {row.key}: decoding '{row.decoding[:80]}' is not the label repro paper render writes ({error})") from None
    return RerunRow(
        row=row,
        file_size=None,
        harness=harness,
        engine_kind=engine_kind,
        engine_names=[row.engine_identity, row.engine],
        variant="cuda" if row.profile.startswith("gpu") else "cpu",
        accelerator=None,
        decoding=decoding,
    )


def _plan_cells(bundle: BundleReader, record: RunRecord) -> list[Cell]:
    """The run's whole plan, recomputed from its embedded matrix (none when it cannot be: check
    has said why)."""
    try:
        loaded = load_matrix(bundle.matrix_path(), embedded=True)
        plan = make_plan(loaded, record.profile, record.profile_settings, templates=record.chat_templates)
    except BadInput:
        return []
    return plan.cells + plan.excluded


def _no_row_reasons(tables: PaperTables) -> dict[str, list[str]]:
    reasons: dict[str, list[str]] = {}
    for cell in tables.exclusions:
        reasons.setdefault(cell.cell_id, []).extend(f"{cell.verdict.lower()}: {reason}" for reason in cell.reasons or ["no reason recorded"])
    for absent in tables.absent:
        reasons.setdefault(absent.cell_id, []).append(f"absent from this partial run: {absent.reason}")
    return reasons


def rerun_row(row: TableRow, cells: list[ValidCell], records: dict[str, RunRecord]) -> RerunRow | None:
    if not cells:
        return None
    first = cells[0]
    record = records.get(first.run_id)
    spec = first.record.cell
    engine = spec.engine
    names = [row.engine_identity, engine.label]
    if engine.build is not None:
        names += [engine.build.build_commit, f"b{engine.build.build_number}"]
    return RerunRow(
        row=row,
        file_size=spec.model.file_size,
        harness=harness_facts(spec, record),
        engine_kind=engine.kind,
        engine_names=[n for n in names if n],
        variant=record.profile_settings.engine_variant if record else "cpu",
        accelerator=first.record.accelerator,
        decoding=spec.decoding,
        profile_tolerance=record.profile_settings.tolerance if record else None,
    )


def harness_facts(cell: Cell, record: RunRecord | None) -> HarnessFacts:
    """An external suite's harness by its adapter and pinned wheel; ours by the project commit."""
    external = cell.suite.external
    if external is not None:
        version = external.wheel.split("==", 1)[1] if external.wheel else None  # a source-pinned harness is named by its sha256
        return HarnessFacts(name=external.harness, version=version, archive_sha256=external.sha256)
    source = record.source if record else None
    return HarnessFacts(name="repro", version=source.repro_version if source else None, commit=source.commit if source else None)


# ---------------------------------------------------------------- verdicts


class InputDifference(BaseModel):
    name: str
    claimed: str
    rerun: str

    def describe(self) -> str:
        return f"{self.name} differs: {self.claimed} claimed, {self.rerun} rerun"


class ClaimVerdict(BaseModel):
    claim: str
    about: str  # model, protocol, suite, setup: what the claim is
    claimed: str  # "137/160"
    verdict: Verdict
    rerun_row: str | None = None
    rerun: str | None = None
    reasons: list[str] = []  # NOT RERUN: why
    differences: list[InputDifference] = []
    judgement: Judgement | None = None
    transcripts: TranscriptIdentity | None = None
    tolerance: str | None = None  # the tolerance applied and where it came from
    notes: list[str] = []  # flips, categories, scenarios on one side only


class ClaimsReport(BaseModel):
    claims_file: str
    sha256: str
    source: str
    runs: list[str]
    verdicts: list[ClaimVerdict]
    unclaimed_rows: list[str] = []

    def passed(self, allow_partial: bool = False) -> bool:
        """Every claim REPRODUCED or CONSISTENT (NOT RERUN too, with --allow-partial)."""
        allowed = PASSING + (("NOT RERUN",) if allow_partial else ())
        return all(v.verdict in allowed for v in self.verdicts)

    def counts(self) -> dict[str, int]:
        names: tuple[Verdict, ...] = ("REPRODUCED", "CONSISTENT", "DIFFERENT", "NOT RERUN")
        return {name: sum(v.verdict == name for v in self.verdicts) for name in names}


def verify_claims(loaded: LoadedClaims, rerun: Rerun) -> ClaimsReport:
    claims = loaded.claims
    verdicts = [verify_claim(claim, claims, rerun) for claim in claims.claims]
    used = {v.rerun_row for v in verdicts if v.rerun_row}
    return ClaimsReport(
        claims_file=str(loaded.path),
        sha256=loaded.sha256,
        source=claims.source.describe(),
        runs=rerun.runs,
        verdicts=verdicts,
        unclaimed_rows=[r.row.key for r in rerun.rows if r.row.key not in used],
    )


def verify_claim(claim: Claim, claims: ClaimsFile, rerun: Rerun) -> ClaimVerdict:
    model, setup, suite = claims.models[claim.model], claims.setups[claim.setup], claims.suites[claim.suite]
    base = ClaimVerdict(
        claim=claim.id,
        about=f"{model.name} {model.quant}, {setup.harness.name} {claim.protocol}, suite {suite.id}, setup {claim.setup}",
        claimed=f"{claim.result.passed}/{claim.result.total}",
        verdict="NOT RERUN",
    )
    candidates = matching_rows(claim, model, setup, suite, rerun)
    if not candidates:
        return base.model_copy(update={"reasons": not_rerun_reasons(claim, model, setup, suite, rerun)})
    scored = sorted(((differing_inputs(claim, model, setup, suite, r), r) for r in candidates), key=lambda pair: len(pair[0]))
    differences, row = scored[0]
    notes = [f"{len(candidates) - 1} other rerun row(s) match this claim; compared with the closest"] if len(candidates) > 1 else []
    return judge_claim(base, claim, setup, suite, row, differences, notes)


def matching_rows(claim: Claim, model: ClaimModel, setup: Setup, suite: ClaimSuite, rerun: Rerun) -> list[RerunRow]:
    """Rows about what the claim is about: the same model bytes, harness, protocol and suite."""
    if model.sha256 is None:
        return []
    return [
        r
        for r in rerun.rows
        if r.row.model_sha256 == model.sha256 and r.harness.name == setup.harness.name and r.row.protocol == claim.protocol and r.row.suite == suite.id
    ]


def not_rerun_reasons(claim: Claim, model: ClaimModel, setup: Setup, suite: ClaimSuite, rerun: Rerun) -> list[str]:
    """Why no rerun row answers the claim, as specifically as the rerun's plans allow."""
    what = f"{model.name} {model.quant}"
    if model.sha256 is None:
        held = _names({f"{r.row.model} ({r.harness.name})" for r in rerun.rows})
        return [f"the claim names no GGUF sha256 for {what}: no rerun can be shown to have run the same file (the rerun's rows: {held})"]
    cells = [c for c in rerun.planned if c.model.sha256 == model.sha256]
    if not cells and not any(r.row.model_sha256 == model.sha256 for r in rerun.rows):
        return [f"{what} (sha256 {model.sha256[:12]}) is not in the rerun's matrix"]
    harness = [c for c in cells if _cell_harness(c) == setup.harness.name]
    if not harness:
        return [f"another harness: the claim was scored by {setup.harness.name}, the rerun ran {what} only under {_names({_cell_harness(c) for c in cells})}"]
    same = [c for c in harness if c.protocol == claim.protocol and c.suite.id == suite.id]
    reasons = [f"cell {c.id}: {reason}" for c in same for reason in rerun.reasons.get(c.id, [])]
    if reasons:
        return reasons
    protocols = _names({c.protocol for c in harness})
    suites = _names({c.suite.id for c in harness})
    return [f"another setup: the rerun ran {what} under protocol(s) {protocols} on suite(s) {suites}, not {claim.protocol} on {suite.id}"]


def _cell_harness(cell: Cell) -> str:
    return cell.suite.external.harness if cell.suite.external else "repro"


def _names(values: set[str]) -> str:
    return ", ".join(sorted(values)) or "none"


# ---------------------------------------------------------------- pinned inputs


def differing_inputs(claim: Claim, model: ClaimModel, setup: Setup, suite: ClaimSuite, rerun: RerunRow) -> list[InputDifference]:
    """Every input the claim pins that the rerun row had otherwise (an input the claim leaves
    out is not compared)."""
    row = rerun.row
    found: list[tuple[str, object, object]] = [
        ("quant", model.quant, row.quant),
        ("engine", setup.engine.kind, rerun.engine_kind),
        ("engine variant", setup.engine.variant, rerun.variant),
        ("harness version", setup.harness.version, rerun.harness.version),
        ("harness commit", setup.harness.commit, rerun.harness.commit),
        ("harness archive sha256", setup.harness.archive_sha256, rerun.harness.archive_sha256),
        ("suite sha256", suite.sha256, row.suite_sha256),
        ("temperature", setup.decoding.temperature, rerun.decoding.temperature),
        ("seed", setup.decoding.seed, rerun.decoding.seed),
        ("max tokens per step", setup.decoding.max_tokens, rerun.decoding.max_tokens),
        ("context", setup.decoding.context, rerun.decoding.context),
        ("hardware profile", setup.hardware.profile, row.profile),
        ("threads per engine", setup.hardware.threads, row.execution.threads if row.execution else None),
        ("engine slots", setup.hardware.slots, row.execution.slots if row.execution else 1),
        ("prompt cache", setup.hardware.cache_prompt, row.execution.cache_prompt if row.execution else False),
    ]
    differences = [InputDifference(name=name, claimed=_shown(a), rerun=_shown(b)) for name, a, b in found if a is not None and a != b]
    differences += _special_differences(claim, model, setup, suite, rerun)
    return differences


def _special_differences(claim: Claim, model: ClaimModel, setup: Setup, suite: ClaimSuite, rerun: RerunRow) -> list[InputDifference]:
    """The inputs compared by more than equality: a build by any of its names, a size as printed,
    the accelerator (none on a CPU), the template, the scenario count."""
    row, found = rerun.row, []
    if setup.engine.build is not None and setup.engine.build not in rerun.engine_names:
        found.append(InputDifference(name="engine build", claimed=setup.engine.build, rerun=row.engine_identity))
    size = rerun.file_size if rerun.file_size is not None else row.file_size_mb * 1024**2
    if model.file_size_gb is not None and abs(size / 1e9 - model.file_size_gb) > 0.005 + (0 if rerun.file_size else 0.0001):  # as printed: two decimals
        found.append(InputDifference(name="file size", claimed=f"{model.file_size_gb:g} GB", rerun=f"{size / 1e9:.2f} GB"))
    if model.file_size is not None and rerun.file_size is not None and model.file_size != rerun.file_size:
        found.append(InputDifference(name="file size", claimed=f"{model.file_size} bytes", rerun=f"{rerun.file_size} bytes"))
    if "accelerator" in setup.hardware.model_fields_set and (setup.hardware.accelerator or None) != (rerun.accelerator or None):
        found.append(InputDifference(name="hardware", claimed=setup.hardware.accelerator or "CPU only", rerun=rerun.accelerator or "CPU only"))
    template, served = claim.chat_template, row.chat_template
    if template is not None and served is not None and (template.source, template.sha256 or served.sha256) != (served.source, served.sha256):
        found.append(
            InputDifference(name="chat template", claimed=f"{template.source} {_short(template.sha256)}", rerun=f"{served.source} {_short(served.sha256)}")
        )
    if suite.scenarios is not None and suite.scenarios != len(row.scenarios):
        found.append(InputDifference(name="suite scenarios", claimed=str(suite.scenarios), rerun=str(len(row.scenarios))))
    return found


def _shown(value: object) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    return _short(value) if isinstance(value, str) and len(value) == 64 else str(value)


def _short(value: object) -> str:
    return str(value)[:12] if value else "-"


# ---------------------------------------------------------------- outcomes


def judge_claim(
    base: ClaimVerdict, claim: Claim, setup: Setup, suite: ClaimSuite, rerun: RerunRow, differences: list[InputDifference], notes: list[str]
) -> ClaimVerdict:
    tolerance, told = applied_tolerance(claim, setup, rerun)
    row = rerun.row
    pairs = paired_outcomes(claim, suite, row)
    notes = notes + category_notes(claim, row)
    identity = None
    if pairs is None:
        judgement = judge_counts((claim.result.passed, claim.result.total), (row.passed, row.total), tolerance)
        notes.append("counts only: the claim gives no per-scenario outcomes for the same scenarios, so its outcomes cannot be paired")
        verdict: Verdict = "CONSISTENT" if judgement.within else "DIFFERENT"
    else:
        judgement = judge_paired(pairs, tolerance)
        identity = transcript_identity(claim, row)
        notes += flip_notes(claim, row)
        same = judgement.only_claimed == 0 and judgement.only_rerun == 0 and identity.identical == identity.compared
        verdict = "REPRODUCED" if same else "CONSISTENT" if judgement.within else "DIFFERENT"
        if same:
            judgement = judgement.model_copy(update={"test": "identical"})
    return base.model_copy(
        update={
            "verdict": verdict,
            "rerun_row": row.key,
            "rerun": f"{row.passed}/{row.total}",
            "differences": differences,
            "judgement": judgement,
            "transcripts": identity,
            "tolerance": f"{tolerance.describe()} ({told})",
            "notes": notes,
        }
    )


def applied_tolerance(claim: Claim, setup: Setup, rerun: RerunRow) -> tuple[Tolerance, str]:
    """The claim's own tolerance, else its setup's, else the rerun profile's, else the default."""
    for tolerance, where in ((claim.tolerance, "stated by the claim"), (setup.tolerance, "stated by the claim's setup")):
        if tolerance is not None:
            return tolerance, where
    if rerun.profile_tolerance is not None:
        return rerun.profile_tolerance, f"stated by the rerun's profile {rerun.row.profile}"
    return Tolerance(), "the default"


def paired_outcomes(claim: Claim, suite: ClaimSuite, row: TableRow) -> list[tuple[bool, bool]] | None:
    """(claimed, rerun) per scenario and repeat, when both sides ran the same scenarios the same
    number of times from the same suite bytes (as far as the claim pins them); else None."""
    scenarios = claim.result.scenarios
    if scenarios is None or set(scenarios) != set(row.scenarios):
        return None
    if suite.sha256 is not None and row.suite_sha256 is not None and suite.sha256 != row.suite_sha256:
        return None
    if any(len(scenarios[s].passed) != len(row.scenarios[s]) for s in scenarios):
        return None
    return [pair for s in sorted(scenarios) for pair in zip(scenarios[s].passed, row.scenarios[s], strict=True)]


def transcript_identity(claim: Claim, row: TableRow) -> TranscriptIdentity:
    """Identical transcripts k of n, over the scenario runs whose transcript both sides recorded."""
    identity = TranscriptIdentity()
    for scenario, outcome in sorted((claim.result.scenarios or {}).items()):
        hashes = row.transcripts.get(scenario, [])
        for repeat, claimed in enumerate(outcome.transcripts or []):
            again = hashes[repeat] if repeat < len(hashes) else ""
            if not again:
                identity.unrecorded += 1
            elif claimed == again:
                identity.identical += 1
            else:
                identity.differing.append(f"scenario {scenario} repeat {repeat + 1}: transcript differs (sha256 {claimed[:12]} claimed, {again[:12]} rerun)")
    identity.compared = identity.identical + len(identity.differing)
    return identity


def flip_notes(claim: Claim, row: TableRow) -> list[str]:
    flips = [
        f"scenario {scenario} repeat {repeat + 1}: {'pass' if a else 'fail'} claimed, {'pass' if b else 'fail'} rerun"
        for scenario, outcome in sorted((claim.result.scenarios or {}).items())
        for repeat, (a, b) in enumerate(zip(outcome.passed, row.scenarios.get(scenario, []), strict=False))
        if a != b
    ]
    more = [f"... and {len(flips) - MAX_LISTED} more flips"] if len(flips) > MAX_LISTED else []
    return flips[:MAX_LISTED] + more


def category_notes(claim: Claim, row: TableRow) -> list[str]:
    notes = []
    for category, count in sorted(claim.result.by_category.items()):
        again = row.by_category.get(category)
        if again is None:
            notes.append(f"category {category}: {count.passed}/{count.total} claimed, not in the rerun")
        elif (count.passed, count.total) != tuple(again):
            notes.append(f"category {category}: {count.passed}/{count.total} claimed, {again[0]}/{again[1]} rerun")
    return notes


# ---------------------------------------------------------------- claims from our own rows


def claims_from_rerun(rerun: Rerun, source: Source, description: str | None = None) -> ClaimsFile:
    """A claims file stating a run's VALID rows as they are: the way our own published rows
    become claims (every scenario's outcome and transcript sha256 included)."""
    models: dict[str, ClaimModel] = {}
    setups: dict[str, Setup] = {}
    suites: dict[str, ClaimSuite] = {}
    claims: list[Claim] = []
    for item in rerun.rows:
        row = item.row
        models[row.model] = ClaimModel(name=row.model, family=row.family, quant=row.quant, file_size=item.file_size, sha256=row.model_sha256)
        setup = setup_of(item)
        name = next((key for key, known in setups.items() if known == setup), None) or _fresh(f"{row.engine_id}.{row.profile}", setups)
        setups[name] = setup
        suites.setdefault(row.suite, ClaimSuite(id=row.suite, sha256=row.suite_sha256, scenarios=len(row.scenarios)))
        claims.append(claim_of(item, name))
    return ClaimsFile(format=1, source=source, description=description, models=models, setups=setups, suites=suites, claims=claims)


def setup_of(item: RerunRow) -> Setup:
    row, execution = item.row, item.row.execution
    decoding = item.decoding
    return Setup(
        description=f"{row.engine} on the {row.profile} profile",
        engine=ClaimEngine(kind=item.engine_kind, build=row.engine_identity, variant=item.variant),  # type: ignore[arg-type]
        hardware=ClaimHardware(
            description=f"repro profile {row.profile}",
            profile=row.profile,
            accelerator=item.accelerator,
            threads=execution.threads if execution else None,
            slots=execution.slots if execution else None,
            cache_prompt=execution.cache_prompt if execution else None,
        ),
        decoding=ClaimDecoding(temperature=decoding.temperature, seed=decoding.seed, max_tokens=decoding.max_tokens, context=decoding.context),
        harness=ClaimHarness(**item.harness.model_dump()),
    )


def claim_of(item: RerunRow, setup: str) -> Claim:
    row = item.row
    scenarios = {
        scenario: ScenarioOutcome(passed=outcomes, transcripts=hashes if all(hashes) and len(hashes) == len(outcomes) else None)
        for scenario, outcomes in row.scenarios.items()
        for hashes in [row.transcripts.get(scenario, [])]
    }
    template = ClaimTemplate(source=row.chat_template.source, sha256=row.chat_template.sha256) if row.chat_template else None
    return Claim(
        id=f"{row.model}.{row.protocol}.{row.suite}"[:128],
        model=row.model,
        setup=setup,
        protocol=row.protocol,
        suite=row.suite,
        chat_template=template,
        result=ClaimResult(
            passed=row.passed,
            total=row.total,
            by_category={category: Count(passed=count[0], total=count[1]) for category, count in row.by_category.items()},
            scenarios=scenarios,
        ),
    )


def _fresh(name: str, taken: dict[str, Setup]) -> str:
    if name not in taken:
        return name
    return next(f"{name}-{n}" for n in range(2, len(taken) + 3) if f"{name}-{n}" not in taken)
