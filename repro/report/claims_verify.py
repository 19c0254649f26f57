"""`repro verify RUN --claims FILE` (and `--published`, which states published rows as claims
and verifies them the same way): each claim answered from a rerun.

Per claim, one verdict:

- REPRODUCED: the rerun has the claim's outcomes, scenario by scenario (and, where both sides
  carry them, identical transcripts), on the claim's setup;
- CONSISTENT: the outcomes differ, within the tolerance (an exact test at a stated level, or the
  claim's own "within k"), on a setup that is not exact;
- REPRODUCED ON ANOTHER SETUP, CONSISTENT ON ANOTHER SETUP: as above, but an input the claim
  pins differs in the rerun and the reviewer did not accept it by name (`--accept`): the claim
  was not rerun as stated, and the verify fails;
- DIFFERENT: outside the tolerance; on the same exact setup (repro.report.pins.exactness), any
  different count, outcome or transcript;
- NOT RERUN: no VALID rerun row answers the claim, with the reason (the model's bytes are not
  pinned or not in the rerun's matrix, another harness or protocol, an excluded or absent cell,
  or another scenario set: counts are compared only over the same scenarios).

A claim is matched to a rerun row by what the claim is about: the model's bytes (sha256: a name
proves nothing), the harness, the protocol and the suite's id. Everything else it pins is
compared by repro.report.pins, the one comparison both verify paths use.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from repro.bundle.layout.discovery import find_runs
from repro.bundle.layout.names import MANIFEST
from repro.bundle.layout.reader import BundleReader
from repro.bundle.records import RunRecord
from repro.core.errors import BadInput
from repro.core.files import sha256_file
from repro.plan.planner import Cell, make_plan
from repro.report.aggregate import PaperTables, TableRow, ValidCell, collect_with_cells
from repro.report.pins import InputDifference, Pins, TemplatePin, differences, exactness
from repro.report.tolerance import Judgement, judge_counts, judge_exact, judge_paired
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
from repro.spec.harnesses import HarnessPin
from repro.spec.matrix import Decoding, load_matrix
from repro.spec.tolerance import Tolerance
from repro.suites.registry import kind_of

Verdict = Literal["REPRODUCED", "REPRODUCED ON ANOTHER SETUP", "CONSISTENT", "CONSISTENT ON ANOTHER SETUP", "DIFFERENT", "NOT RERUN"]
VERDICTS: tuple[Verdict, ...] = ("REPRODUCED", "REPRODUCED ON ANOTHER SETUP", "CONSISTENT", "CONSISTENT ON ANOTHER SETUP", "DIFFERENT", "NOT RERUN")
PASSING: tuple[Verdict, ...] = ("REPRODUCED", "CONSISTENT")
ALWAYS_COUNTED: tuple[Verdict, ...] = ("REPRODUCED", "CONSISTENT", "DIFFERENT", "NOT RERUN")
MAX_LISTED = 20  # flips and differing transcripts named per claim; the counts say how many more


# ---------------------------------------------------------------- the rerun, as facts


class RerunRow(BaseModel):
    """A VALID rerun row with what a claim is compared on beside its table row."""

    row: TableRow
    harness: HarnessPin
    decoding: Decoding
    accelerator: str | None = None
    profile_tolerance: Tolerance | None = None

    def pins(self) -> Pins:
        row, execution, decoding = self.row, self.row.execution, self.decoding
        template = TemplatePin(source=row.chat_template.source, sha256=row.chat_template.sha256) if row.chat_template else None
        return Pins(
            quant=row.quant,
            file_size=row.file_size,
            chat_template=template,
            engine_kind=row.engine_kind,
            engine_names=row.engine_names or [row.engine_identity, row.engine],
            engine_variant=row.engine_variant or ("cuda" if row.profile.startswith("gpu") else "cpu"),
            harness=self.harness,
            temperature=decoding.temperature,
            seed=decoding.seed,
            max_tokens=decoding.max_tokens,
            context=decoding.context,
            profile=row.profile,
            accelerator=self.accelerator,
            driver_version=row.hardware.driver_version if row.hardware else None,
            cpu_model=row.cpu_model,
            threads=execution.threads if execution else None,
            slots=execution.slots if execution else 1,
            cache_prompt=execution.cache_prompt if execution else False,
        )


class Rerun(BaseModel):
    """The rerun's rows, and what its plans hold that did not become a row (for NOT RERUN)."""

    rows: list[RerunRow]
    planned: list[Cell] = []  # every cell of every run's plan, runnable and excluded
    reasons: dict[str, list[str]] = {}  # cell id -> why it is no row (excluded, invalid, absent)
    runs: list[str] = []


Collected = tuple[PaperTables, dict[str, list[ValidCell]]]  # what collect_with_cells gives


def load_rerun(paths: list[Path], collected: Collected | None = None) -> Rerun:
    """The VALID rows of the rerun (as `repro paper render` builds them), each with its facts;
    `collected` is collect_with_cells(paths) when the caller has it already (each bundle checked once)."""
    tables, cells = collected or collect_with_cells(paths)
    records: dict[str, RunRecord] = {}
    planned: list[Cell] = []
    for path in paths:
        for run_dir in find_runs(path):
            bundle = BundleReader(run_dir)
            record = bundle.run()
            records[record.run_id] = record
            planned += _plan_cells(bundle, record)
    rows = []
    for row in tables.rows:
        first = cells[row.key][0] if cells.get(row.key) else None
        if first is not None:
            run = records.get(first.run_id)
            harness = first.harness or kind_of(first.record.cell.suite).harness_pin(first.record.cell.suite, run.source if run else None)
            tolerance = run.profile_settings.tolerance if run else None
            rows.append(
                RerunRow(row=row, harness=harness, decoding=first.record.cell.decoding, accelerator=first.record.accelerator, profile_tolerance=tolerance)
            )
    return Rerun(rows=rows, planned=planned, reasons=_no_row_reasons(tables), runs=tables.runs)


def published_claims(path: Path, collected: Collected | None = None) -> tuple[LoadedClaims, dict[str, str]]:
    """Published numbers (a results.json, or the published bundle) stated as claims, the way `repro
    claims from-results` states them, and each claim's published row key: `--published` is
    verified as any claims file is (`collected`: the bundle's collect_with_cells, when at hand)."""
    side = load_rerun([path], collected) if path.is_dir() else load_published_rows(path)
    today = datetime.datetime.now(datetime.UTC).date()
    source = Source.model_construct(citation=f"the published numbers {path.name}", path=str(path), url=None, date=today, revision=None)
    claims = claims_from_rerun(side, source)
    keys = {claim.id: item.row.key for claim, item in zip(claims.claims, side.rows, strict=True)}
    digest = sha256_file(path / MANIFEST if path.is_dir() else path)
    return LoadedClaims(path=path, sha256=digest, claims=claims), keys


def load_published_rows(path: Path, harness: HarnessPin | None = None, engine_kind: str | None = None) -> Rerun:
    """The rows of a results.json (no bundle at hand): what each row records of its harness and
    engine, else what the publisher states (`harness`, `engine_kind`); a row that records neither
    cannot be matched to a claim, and is refused in one line."""
    tables = load_published(path)
    return Rerun(rows=[published_row(row, harness, engine_kind) for row in tables.rows], reasons=_no_row_reasons(tables), runs=tables.runs)


def published_row(row: TableRow, harness: HarnessPin | None = None, engine_kind: str | None = None) -> RerunRow:
    """A results.json row as facts: its decoding read back from its label (t=0 seed=42 max_tokens=384 ctx=4096)."""
    parts = dict(part.split("=", 1) for part in row.decoding.split() if "=" in part)
    try:
        decoding = Decoding(temperature=float(parts["t"]), seed=int(parts["seed"]), max_tokens=int(parts["max_tokens"]), context=int(parts["ctx"]))
    except (KeyError, ValueError) as error:
        raise BadInput(f"row {row.key}: decoding '{row.decoding[:80]}' is not the label repro paper render writes ({error})") from None
    pin = row.harness or harness
    if pin is None:
        raise BadInput(f"row {row.key}: the results.json names no harness (an older repro wrote it): give the published bundle, or state --harness")
    if row.engine_kind is None and engine_kind is not None:
        row = row.model_copy(update={"engine_kind": engine_kind})
    accelerator = row.hardware.accelerator if row.hardware else None
    return RerunRow(row=row, harness=pin, decoding=decoding, accelerator=accelerator)


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


# ---------------------------------------------------------------- verdicts


class ClaimVerdict(BaseModel):
    claim: str
    about: str  # model, protocol, suite, setup: what the claim is
    claimed: str  # "137/160"
    verdict: Verdict
    setup: str = "-"  # "same", "accepted: threads", "differs: threads, hardware"
    rule: str | None = None  # which rule decided: identity on the same exact setup, or the tolerance and why
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
    accepted: list[str] = []  # the input names accepted by --accept
    unclaimed_rows: list[str] = []

    def passed(self, allow_partial: bool = False) -> bool:
        """Every claim REPRODUCED or CONSISTENT on its setup (NOT RERUN too, with --allow-partial)."""
        allowed = PASSING + (("NOT RERUN",) if allow_partial else ())
        return all(v.verdict in allowed for v in self.verdicts)

    def counts(self) -> dict[str, int]:
        """Claims per verdict: the four plain ones always, the ON ANOTHER SETUP ones when any."""
        found = {name: sum(v.verdict == name for v in self.verdicts) for name in VERDICTS}
        return {name: n for name, n in found.items() if n or name in ALWAYS_COUNTED}


class Resolved(BaseModel):
    """A claim with everything of the claims file it refers to."""

    claim: Claim
    model: ClaimModel
    setup: Setup
    suite: ClaimSuite

    @classmethod
    def of(cls, claim: Claim, claims: ClaimsFile) -> Resolved:
        return cls(claim=claim, model=claims.models[claim.model], setup=claims.setups[claim.setup], suite=claims.suites[claim.suite])

    def pins(self) -> Pins:
        model, setup, template = self.model, self.setup, self.claim.chat_template
        hardware, decoding = setup.hardware, setup.decoding
        return Pins(
            quant=model.quant,
            file_size=model.file_size,
            file_size_gb=model.file_size_gb,
            chat_template=TemplatePin(source=template.source, sha256=template.sha256) if template else None,
            engine_kind=setup.engine.kind,
            engine_build=setup.engine.build,
            engine_variant=setup.engine.variant,
            harness=HarnessPin(**setup.harness.model_dump()),
            temperature=decoding.temperature,
            seed=decoding.seed,
            max_tokens=decoding.max_tokens,
            context=decoding.context,
            profile=hardware.profile,
            accelerator=hardware.accelerator,
            accelerator_stated="accelerator" in hardware.model_fields_set,
            driver_version=hardware.driver_version,
            cpu_model=hardware.cpu_model,
            threads=hardware.threads,
            slots=hardware.slots,
            cache_prompt=hardware.cache_prompt,
        )


Where = Callable[[str, str, str, int], str | None]  # (claim id, rerun row key, scenario, repeat) -> where the transcripts first part


class Options(BaseModel):
    """What the reviewer asked of the verify: inputs accepted as differing, identical transcripts
    even where the setup is not exact; and, with both bundles at hand, where transcripts part."""

    accept: frozenset[str] = frozenset()
    require_identical: bool = False
    where: Where | None = None


def verify_claims(loaded: LoadedClaims, rerun: Rerun, options: Options | None = None) -> ClaimsReport:
    claims, options = loaded.claims, options or Options()
    verdicts = [verify_claim(Resolved.of(claim, claims), rerun, options) for claim in claims.claims]
    used = {v.rerun_row for v in verdicts if v.rerun_row}
    return ClaimsReport(
        claims_file=str(loaded.path),
        sha256=loaded.sha256,
        source=claims.source.describe(),
        runs=rerun.runs,
        verdicts=verdicts,
        accepted=sorted(options.accept),
        unclaimed_rows=[r.row.key for r in rerun.rows if r.row.key not in used],
    )


def verify_claim(resolved: Resolved, rerun: Rerun, options: Options) -> ClaimVerdict:
    claim, model, setup = resolved.claim, resolved.model, resolved.setup
    base = ClaimVerdict(
        claim=claim.id,
        about=f"{model.name} {model.quant}, {setup.harness.name} {claim.protocol}, suite {resolved.suite.id}, setup {claim.setup}",
        claimed=f"{claim.result.passed}/{claim.result.total}",
        verdict="NOT RERUN",
    )
    candidates = matching_rows(resolved, rerun)
    if not candidates:
        return base.model_copy(update={"reasons": not_rerun_reasons(resolved, rerun)})
    pins = resolved.pins()
    scored = sorted(((differences(pins, r.pins(), options.accept), r) for r in candidates), key=lambda pair: sum(not d.accepted for d in pair[0]))
    found, row = scored[0]
    notes = [f"{len(candidates) - 1} other rerun row(s) match this claim; compared with the closest"] if len(candidates) > 1 else []
    base = base.model_copy(update={"rerun_row": row.row.key, "rerun": f"{row.row.passed}/{row.row.total}", "differences": found, "notes": notes})
    other_set = scenario_set_problem(resolved, row.row)
    if other_set is not None:
        return base.model_copy(update={"reasons": [other_set], "setup": setup_label(found)})
    return judge_claim(base, resolved, row, found, options)


def matching_rows(resolved: Resolved, rerun: Rerun) -> list[RerunRow]:
    """Rows about what the claim is about: the same model bytes, harness, protocol and suite."""
    claim, sha256 = resolved.claim, resolved.model.sha256
    if sha256 is None:
        return []
    harness, suite = resolved.setup.harness.name, resolved.suite.id
    return [r for r in rerun.rows if r.row.model_sha256 == sha256 and r.harness.name == harness and r.row.protocol == claim.protocol and r.row.suite == suite]


def not_rerun_reasons(resolved: Resolved, rerun: Rerun) -> list[str]:
    """Why no rerun row answers the claim, as specifically as the rerun's plans allow."""
    claim, model, harness_name, suite = resolved.claim, resolved.model, resolved.setup.harness.name, resolved.suite
    what = f"{model.name} {model.quant}"
    if model.sha256 is None:
        held = _names({f"{r.row.model} ({r.harness.name})" for r in rerun.rows})
        return [f"the claim names no GGUF sha256 for {what}: no rerun can be shown to have run the same file (the rerun's rows: {held})"]
    cells = [c for c in rerun.planned if c.model.sha256 == model.sha256]
    if not cells and not any(r.row.model_sha256 == model.sha256 for r in rerun.rows):
        return [f"{what} (sha256 {model.sha256[:12]}) is not in the rerun's matrix"]
    harness = [c for c in cells if _cell_harness(c) == harness_name]
    if not harness:
        return [f"another harness: the claim was scored by {harness_name}, the rerun ran {what} only under {_names({_cell_harness(c) for c in cells})}"]
    same = [c for c in harness if c.protocol == claim.protocol and c.suite.id == suite.id]
    reasons = [f"cell {c.id}: {reason}" for c in same for reason in rerun.reasons.get(c.id, [])]
    if reasons:
        return reasons
    protocols = _names({c.protocol for c in harness})
    suites = _names({c.suite.id for c in harness})
    return [f"another setup: the rerun ran {what} under protocol(s) {protocols} on suite(s) {suites}, not {claim.protocol} on {suite.id}"]


def _cell_harness(cell: Cell) -> str:
    return kind_of(cell.suite).harness_pin(cell.suite, None).name


def _names(values: set[str]) -> str:
    return ", ".join(sorted(values)) or "none"


def scenario_set_problem(resolved: Resolved, row: TableRow) -> str | None:
    """Counts compare like with like: None when the rerun ran the claim's scenario set (the same
    suite bytes where both state them, the same scenarios and runs); else why not."""
    suite, result = resolved.suite, resolved.claim.result
    if suite.sha256 is not None and row.suite_sha256 is not None and suite.sha256 != row.suite_sha256:
        return f"another scenario set: the claim's suite {suite.id} has sha256 {suite.sha256[:12]}, the rerun's {row.suite_sha256[:12]}"
    if suite.scenarios is not None and suite.scenarios != len(row.scenarios):
        return f"another scenario set: the claim counts {suite.scenarios} scenarios, the rerun ran {len(row.scenarios)}"
    if result.total != row.total:
        return f"another scenario set: the claim counts {result.total} scenario runs, the rerun ran {row.total}"
    if result.scenarios is not None and set(result.scenarios) != set(row.scenarios):
        only = sorted(set(result.scenarios) - set(row.scenarios))[:5]
        return f"another scenario set: the claim's scenarios are not the rerun's (claimed only: {', '.join(only) or 'none'})"
    return None


def setup_label(found: list[InputDifference]) -> str:
    """ "same", "accepted: threads", or "differs: threads, hardware" (the names not accepted)."""
    refused = sorted({d.name for d in found if not d.accepted})
    if refused:
        return "differs: " + ", ".join(refused)
    return "accepted: " + ", ".join(sorted({d.name for d in found})) if found else "same"


# ---------------------------------------------------------------- outcomes


def judge_claim(base: ClaimVerdict, resolved: Resolved, rerun: RerunRow, found: list[InputDifference], options: Options) -> ClaimVerdict:
    claim, row = resolved.claim, rerun.row
    pairs = paired_outcomes(claim, row)
    identity = transcript_identity(claim, row, options.where) if pairs is not None else None
    categories = category_notes(claim, row)
    notes = base.notes + categories + (flip_notes(claim, row) if pairs is not None else [])
    if pairs is None:
        notes.append("counts only: the claim gives no per-scenario outcomes for the same scenarios, so its outcomes cannot be paired")
    transcripts_same = identity is None or identity.identical == identity.compared
    not_exact = exactness(resolved.pins(), rerun.pins(), found)
    if not_exact is None:
        judgement, rule = judge_exact(pairs, claim.result, row, transcripts_same and not categories), exact_rule(identity)
        verdict: Verdict = "REPRODUCED" if judgement.within else "DIFFERENT"
        tolerance = "none: the same exact setup promises identity"
    else:
        tolerance_used, told = applied_tolerance(claim, resolved.setup, rerun)
        judgement = (
            judge_counts((claim.result.passed, claim.result.total), (row.passed, row.total), tolerance_used)
            if pairs is None
            else judge_paired(pairs, tolerance_used)
        )
        same = pairs is not None and judgement.only_claimed == 0 and judgement.only_rerun == 0 and transcripts_same
        verdict = "REPRODUCED" if same else "CONSISTENT" if judgement.within and (transcripts_same or not options.require_identical) else "DIFFERENT"
        judgement = judgement.model_copy(update={"test": "identical"}) if same else judgement
        tolerance, rule = f"{tolerance_used.describe()} ({told})", f"the tolerance test, since the setup is not exact ({not_exact})"
    if verdict in PASSING and any(not d.accepted for d in found):
        verdict = "REPRODUCED ON ANOTHER SETUP" if verdict == "REPRODUCED" else "CONSISTENT ON ANOTHER SETUP"
    update = {
        "verdict": verdict,
        "setup": setup_label(found),
        "rule": rule,
        "judgement": judgement,
        "transcripts": identity,
        "tolerance": tolerance,
        "notes": notes,
    }
    return base.model_copy(update=update)


def exact_rule(identity: TranscriptIdentity | None) -> str:
    what = "outcomes and transcripts" if identity is not None and identity.compared else "counts"
    return f"identity: the same exact setup (CPU, the same threads, one slot, no prompt cache, the same build, model and harness) promises identical {what}"


def applied_tolerance(claim: Claim, setup: Setup, rerun: RerunRow) -> tuple[Tolerance, str]:
    """The claim's own tolerance, else its setup's, else the rerun profile's, else the default."""
    for tolerance, where in ((claim.tolerance, "stated by the claim"), (setup.tolerance, "stated by the claim's setup")):
        if tolerance is not None:
            return tolerance, where
    if rerun.profile_tolerance is not None:
        return rerun.profile_tolerance, f"stated by the rerun's profile {rerun.row.profile}"
    return Tolerance(), "the default"


def paired_outcomes(claim: Claim, row: TableRow) -> list[tuple[bool, bool]] | None:
    """(claimed, rerun) per scenario and repeat, when the claim gives per-scenario outcomes of the
    rerun's scenarios, each run as often (scenario_set_problem has compared the sets); else None."""
    scenarios = claim.result.scenarios
    if scenarios is None or set(scenarios) != set(row.scenarios):
        return None
    if any(len(scenarios[s].passed) != len(row.scenarios[s]) for s in scenarios):
        return None
    return [pair for s in sorted(scenarios) for pair in zip(scenarios[s].passed, row.scenarios[s], strict=True)]


def transcript_identity(claim: Claim, row: TableRow, where: Where | None = None) -> TranscriptIdentity:
    """Identical transcripts k of n, over the scenario runs whose transcript both sides recorded
    (each differing one named by where it first differs, when `where` can tell)."""
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
                told = where(claim.id, row.key, scenario, repeat) if where else None
                identity.differing.append(
                    f"scenario {scenario} repeat {repeat + 1}: transcript differs ({told or f'sha256 {claimed[:12]} claimed, {again[:12]} rerun'})"
                )
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
    """Each category whose count differs, compared only over the same number of scenario runs."""
    notes = []
    for category, count in sorted(claim.result.by_category.items()):
        again = row.by_category.get(category)
        if again is None:
            notes.append(f"category {category}: {count.passed}/{count.total} claimed, not in the rerun")
        elif count.total != again[1]:
            notes.append(f"category {category}: {count.total} scenario runs claimed, {again[1]} rerun: not compared")
        elif count.passed != again[0]:
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
        models[row.model] = ClaimModel(name=row.model, family=row.family, quant=row.quant, file_size=row.file_size, sha256=row.model_sha256)
        setup = setup_of(item)
        name = next((key for key, known in setups.items() if known == setup), None) or _fresh(f"{row.engine_id}.{row.profile}", setups)
        setups[name] = setup
        suites.setdefault(row.suite, ClaimSuite(id=row.suite, sha256=row.suite_sha256, scenarios=len(row.scenarios)))
        claims.append(claim_of(item, name, {c.id for c in claims}))
    return ClaimsFile(format=1, source=source, description=description, models=models, setups=setups, suites=suites, claims=claims)


def setup_of(item: RerunRow) -> Setup:
    row, execution, pins = item.row, item.row.execution, item.pins()
    decoding = item.decoding
    return Setup(
        description=f"{row.engine} on the {row.profile} profile",
        engine=ClaimEngine(kind=pins.engine_kind or "llama.cpp", build=row.engine_identity, variant=pins.engine_variant),  # type: ignore[arg-type]
        hardware=ClaimHardware(
            description=f"repro profile {row.profile}",
            profile=row.profile,
            accelerator=item.accelerator,
            driver_version=row.hardware.driver_version if row.hardware else None,
            cpu_model=row.cpu_model,
            threads=execution.threads if execution else None,
            slots=execution.slots if execution else None,
            cache_prompt=execution.cache_prompt if execution else None,
        ),
        decoding=ClaimDecoding(temperature=decoding.temperature, seed=decoding.seed, max_tokens=decoding.max_tokens, context=decoding.context),
        harness=ClaimHarness(**item.harness.model_dump()),
    )


def claim_of(item: RerunRow, setup: str, taken: set[str]) -> Claim:
    row = item.row
    name = _fresh(f"{row.model}.{row.protocol}.{row.suite}"[:120], taken)
    scenarios = {
        scenario: ScenarioOutcome(passed=outcomes, transcripts=hashes if all(hashes) and len(hashes) == len(outcomes) else None)
        for scenario, outcomes in row.scenarios.items()
        for hashes in [row.transcripts.get(scenario, [])]
    }
    template = ClaimTemplate(source=row.chat_template.source, sha256=row.chat_template.sha256) if row.chat_template else None
    return Claim(
        id=name,
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


def _fresh(name: str, taken: Collection[str]) -> str:
    if name not in taken:
        return name
    return next(f"{name}-{n}" for n in range(2, len(taken) + 3) if f"{name}-{n}" not in taken)
