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
- DIFFERENT: outside the tolerance; on the same exact setup (repro.verify.exact), any
  different count, outcome or transcript;
- NOT RERUN: no VALID rerun row answers the claim, with the reason (the model's bytes are not
  pinned or not in the rerun's matrix, another harness or protocol, an excluded or absent cell,
  or another scenario set: counts are compared only over the same scenarios).

A claim is matched to a rerun row by what the claim is about: the model's bytes (sha256: a name
proves nothing), the harness, the protocol and the suite's id. Everything else it pins is
compared by repro.bundle.setup, the one comparison of setups that every path uses.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, get_args

from pydantic import BaseModel

from repro.bundle.setup import SAME_KERNELS, InputDifference, SetupRecord, TemplatePin, differences
from repro.plan.planner import Cell
from repro.report.tables import TableRow
from repro.spec.claims import (
    Claim,
    ClaimModel,
    ClaimsFile,
    ClaimSuite,
    LoadedClaims,
    Setup,
)
from repro.spec.harnesses import HarnessPin
from repro.spec.tolerance import Tolerance
from repro.suites.registry import kind_of
from repro.verify.exact import exactness
from repro.verify.published import TranscriptIdentity
from repro.verify.rerun_rows import Rerun, RerunRow
from repro.verify.tolerance import Judgement, judge_counts, judge_exact, judge_paired

Verdict = Literal[
    "REPRODUCED",
    "REPRODUCED ON ANOTHER SETUP",
    "CONSISTENT",
    "CONSISTENT ON ANOTHER SETUP",
    "CONSISTENT (COUNTS ONLY)",
    "DIFFERENT",
    "NOT RERUN",
]
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)  # the order the counts are printed in
# from best to worst: where several rerun rows answer one claim, the worst verdict stands
SEVERITY: tuple[Verdict, ...] = (*VERDICTS[:-2], "NOT RERUN", "DIFFERENT")
PASSING: tuple[Verdict, ...] = ("REPRODUCED", "CONSISTENT")
ALWAYS_COUNTED: tuple[Verdict, ...] = ("REPRODUCED", "CONSISTENT", "DIFFERENT", "NOT RERUN")
MAX_LISTED = 20  # flips and differing transcripts named per claim; the counts say how many more

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
    # the published bundle's INVALID cells, "cell: its first reason" (verify --published of a bundle)
    published_invalid: list[str] = []
    narrowed: bool = False  # --allow-invalid-published: verified against the published VALID rows alone
    host_environment: str | None = None  # where the two sides' host locks differ (information alone)

    def passed(self, allow_partial: bool = False) -> bool:
        """Every claim REPRODUCED or CONSISTENT on its setup (NOT RERUN too, with --allow-partial),
        and a published side that is clean (or narrowed to its VALID rows by name)."""
        allowed = PASSING + (("NOT RERUN",) if allow_partial else ())
        clean = not self.published_invalid or self.narrowed
        rerun = any(v.verdict != "NOT RERUN" for v in self.verdicts)  # --allow-partial with nothing rerun fails
        return clean and rerun and all(v.verdict in allowed for v in self.verdicts)

    def counts(self) -> dict[str, int]:
        """Claims per verdict: the four plain ones always, the ON ANOTHER SETUP ones when any."""
        found = {name: sum(v.verdict == name for v in self.verdicts) for name in VERDICTS}
        return {name: n for name, n in found.items() if n or name in ALWAYS_COUNTED}

    def conclusion(self, side: str = "claimed") -> str:
        """What the verify found, in one line: "differs" only where an outcome, a count or a
        transcript differs; a rerun that differs from the claim only in its setup names the
        inputs (`side`: how the claim's value is named, "claimed" or "published")."""
        found = self.found(side)
        if not self.published_invalid:
            return found
        invalid = f"{len(self.published_invalid)} INVALID published cell(s), first {self.published_invalid[0]}"
        if self.narrowed:
            return f"{found}; against the VALID published rows only (--allow-invalid-published: {invalid})"
        return f"the published side is not clean ({invalid}); {found}"

    def found(self, side: str) -> str:
        """What the claims' verdicts say, in one line (see `conclusion`)."""
        counts, total = self.counts(), len(self.verdicts)
        transcripts = transcripts_line(self.verdicts)
        if not total:
            return "nothing verified: no claims"
        if counts["DIFFERENT"]:
            different = counts["DIFFERENT"]
            return f"differs: {different} of {total} claims DIFFERENT (the lines above say where); {transcripts}"
        rerun = [v for v in self.verdicts if v.verdict != "NOT RERUN"]
        if not rerun:
            return f"not rerun: none of the {total} claims has a rerun row (the lines above say why)"
        word = (
            "reproduced"
            if all(v.verdict.startswith("REPRODUCED") for v in rerun)
            else "consistent in counts only (no per-scenario outcomes to pair)"
            if any(v.verdict == "CONSISTENT (COUNTS ONLY)" for v in rerun)
            else "consistent"
        )
        inputs = setup_changes(rerun, side)
        where = f" on another setup ({inputs})" if inputs else ""
        missing = total - len(rerun)
        unrun = f" ({missing} not rerun: the lines above say why)" if missing else ""
        return f"{word}{where}: {len(rerun)} of {total} claims{unrun}; {transcripts}"


def unchecked_published(cells: list[tuple[str, list[str]]]) -> list[ClaimVerdict]:
    """A published bundle's UNCHECKED cells as claims NOT RERUN: their rows could not be stated,
    since what their judgement needs is not at hand (the reason names it)."""
    return [
        ClaimVerdict(
            claim=cell_id,
            about="a published cell that could not be checked here",
            claimed="-",
            verdict="NOT RERUN",
            reasons=[f"the published cell is UNCHECKED: {reasons[0] if reasons else 'an input is not at hand'}"],
        )
        for cell_id, reasons in cells
    ]


def transcripts_line(verdicts: list[ClaimVerdict]) -> str:
    """Identical transcripts over every claim: "55 of 55 transcripts identical"."""
    identical = sum(v.transcripts.identical for v in verdicts if v.transcripts)
    compared = sum(v.transcripts.compared for v in verdicts if v.transcripts)
    return f"{identical} of {compared} transcripts identical" if compared else "no transcripts compared"


def setup_changes(verdicts: list[ClaimVerdict], side: str) -> str:
    """Each input not accepted that the rerun ran otherwise, once: "CPU: AMD EPYC published,
    Intel Xeon here, the same engine kernels"."""
    seen: dict[tuple[str, str, str], str] = {}
    for item in verdicts:
        for d in item.differences:
            if not d.accepted:
                kernels = ", the same engine kernels" if d.note and d.note.startswith(SAME_KERNELS) else ""
                seen.setdefault((d.what, d.claimed, d.rerun), f"{d.what}: {d.claimed} {side}, {d.rerun} here{kernels}")
    return "; ".join(seen.values())


class Resolved(BaseModel):
    """A claim with everything of the claims file it refers to."""

    claim: Claim
    model: ClaimModel
    setup: Setup
    suite: ClaimSuite

    @classmethod
    def of(cls, claim: Claim, claims: ClaimsFile) -> Resolved:
        return cls(
            claim=claim,
            model=claims.models[claim.model],
            setup=claims.setups[claim.setup],
            suite=claims.suites[claim.suite],
        )

    def pins(self) -> SetupRecord:
        model, setup, template = self.model, self.setup, self.claim.chat_template
        hardware, decoding = setup.hardware, setup.decoding
        return SetupRecord(
            quant=model.quant,
            file_size=model.file_size,
            file_size_gb=model.file_size_gb,
            chat_template=TemplatePin(source=template.source, sha256=template.sha256) if template else None,
            engine_kind=setup.engine.kind,
            engine_build=setup.engine.build,
            engine_variant=setup.engine.variant,
            harness=HarnessPin(**setup.harness.model_dump()),
            runtime=setup.runtime,
            temperature=decoding.temperature,
            seed=decoding.seed,
            max_tokens=decoding.max_tokens,
            context=decoding.context,
            profile=hardware.profile,
            accelerator=hardware.accelerator,
            accelerator_stated="accelerator" in hardware.model_fields_set,
            driver_version=hardware.driver_version,
            cpu_model=hardware.cpu_model,
            kernels=hardware.kernels,
            threads=hardware.threads,
            slots=hardware.slots,
            cache_prompt=hardware.cache_prompt,
        )


# (claim id, rerun row key, scenario, repeat) -> where the transcripts first part
Where = Callable[[str, str, str, int], str | None]


class Options(BaseModel):
    """What the reviewer asked of the verify: inputs accepted as differing, identical transcripts
    even where the setup is not exact; and, with both bundles at hand, where transcripts part."""

    accept: frozenset[str] = frozenset()
    require_identical: bool = False
    where: Where | None = None
    # with the published bundle at hand: each claim's setup as its row's cells record it (claim id ->)
    stated: dict[str, SetupRecord] = {}

    def claimed_setup(self, resolved: Resolved) -> SetupRecord:
        """The setup a claim states: its published row's record where the bundle is at hand, else the claim's words."""
        return self.stated.get(resolved.claim.id) or resolved.pins()


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
        about=f"{model.name} {model.quant}, {setup.harness.name} {claim.protocol}, "
        f"suite {resolved.suite.id}, setup {claim.setup}",
        claimed=f"{claim.result.passed}/{claim.result.total}",
        verdict="NOT RERUN",
    )
    candidates = matching_rows(resolved, rerun)
    if not candidates:
        return base.model_copy(update={"reasons": not_rerun_reasons(resolved, rerun)})
    pins = options.claimed_setup(resolved)
    scored = [(differences(pins, r.pins(), options.accept), r) for r in candidates]
    closest = min(sum(not d.accepted for d in found) for found, _ in scored)
    judged = [
        judge_row(base, resolved, row, found, options)
        for found, row in sorted(scored, key=lambda pair: (pair[1].row.key, pair[1].row.model_dump_json()))
        if sum(not d.accepted for d in found) == closest
    ]
    worst = max(judged, key=lambda v: SEVERITY.index(v.verdict))  # the first of the worst, in row order
    return worst.model_copy(update={"notes": candidate_notes(len(candidates), judged) + worst.notes})


def judge_row(
    base: ClaimVerdict, resolved: Resolved, row: RerunRow, found: list[InputDifference], options: Options
) -> ClaimVerdict:
    """One rerun row's answer to the claim."""
    base = base.model_copy(
        update={"rerun_row": row.row.key, "rerun": f"{row.row.passed}/{row.row.total}", "differences": found}
    )
    other_set = scenario_set_problem(resolved, row.row)
    if other_set is not None:
        return base.model_copy(update={"reasons": [other_set], "setup": setup_label(found)})
    return judge_claim(base, resolved, row, found, options)


def candidate_notes(candidates: int, judged: list[ClaimVerdict]) -> list[str]:
    """What several rerun rows of one claim said: the rows judged (those of the closest setup),
    and where they disagree, each one's verdict; the worst stands, whatever the order of the reruns."""
    notes = []
    if candidates > len(judged):
        notes.append(f"{candidates - len(judged)} other rerun row(s) match this claim on a farther setup; not judged")
    if len({v.verdict for v in judged}) > 1:
        said = "; ".join(f"{v.rerun_row}: {v.verdict}" for v in judged)
        notes.append(f"{len(judged)} rerun rows answer this claim and disagree ({said}); the worst verdict stands")
    elif len(judged) > 1:
        notes.append(f"{len(judged)} rerun rows answer this claim, each {judged[0].verdict}")
    return notes


def matching_rows(resolved: Resolved, rerun: Rerun) -> list[RerunRow]:
    """Rows about what the claim is about: the same model bytes, harness, protocol and suite."""
    claim, sha256 = resolved.claim, resolved.model.sha256
    if sha256 is None:
        return []
    harness, suite = resolved.setup.harness.name, resolved.suite.id
    return [
        r
        for r in rerun.rows
        if r.row.model_sha256 == sha256
        and r.harness.name == harness
        and r.row.protocol == claim.protocol
        and r.row.suite == suite
    ]


def not_rerun_reasons(resolved: Resolved, rerun: Rerun) -> list[str]:
    """Why no rerun row answers the claim, as specifically as the rerun's plans allow."""
    claim, model, harness_name, suite = resolved.claim, resolved.model, resolved.setup.harness.name, resolved.suite
    what = f"{model.name} {model.quant}"
    if model.sha256 is None:
        held = _names({f"{r.row.model} ({r.harness.name})" for r in rerun.rows})
        return [
            f"the claim names no GGUF sha256 for {what}: no rerun can be shown to have run the same file "
            f"(the rerun's rows: {held})"
        ]
    cells = [c for c in rerun.planned if c.model.sha256 == model.sha256]
    if not cells and not any(r.row.model_sha256 == model.sha256 for r in rerun.rows):
        return [f"{what} (sha256 {model.sha256[:12]}) is not in the rerun's matrix"]
    harness = [c for c in cells if _cell_harness(c) == harness_name]
    if not harness:
        return [
            f"another harness: the claim was scored by {harness_name}, the rerun ran {what} only under "
            f"{_names({_cell_harness(c) for c in cells})}"
        ]
    same = [c for c in harness if c.protocol == claim.protocol and c.suite.id == suite.id]
    reasons = [f"cell {c.id}: {reason}" for c in same for reason in rerun.reasons.get(c.id, [])]
    if reasons:
        return reasons
    protocols = _names({c.protocol for c in harness})
    suites = _names({c.suite.id for c in harness})
    return [
        f"another setup: the rerun ran {what} under protocol(s) {protocols} on suite(s) {suites}, "
        f"not {claim.protocol} on {suite.id}"
    ]


def _cell_harness(cell: Cell) -> str:
    return kind_of(cell.suite).harness_pin(cell.suite, None).name


def _names(values: set[str]) -> str:
    return ", ".join(sorted(values)) or "none"


def scenario_set_problem(resolved: Resolved, row: TableRow) -> str | None:
    """Counts compare like with like: None when the rerun ran the claim's scenario set (the same
    suite bytes where both state them, the same scenarios and runs); else why not."""
    suite, result = resolved.suite, resolved.claim.result
    if suite.version is not None and suite.sha256 is None:
        return (
            f"another scenario set, as far as can be told: the claim names its suite {suite.id} by version "
            f"{suite.version} alone, which no rerun records; state the suite's sha256 to compare it"
        )
    if suite.sha256 is not None and row.suite_sha256 is not None and suite.sha256 != row.suite_sha256:
        return (
            f"another scenario set: the claim's suite {suite.id} has sha256 {suite.sha256[:12]}, "
            f"the rerun's {row.suite_sha256[:12]}"
        )
    if row.parts is not None and result.scenarios is None:
        return (
            f"another scenario set, as far as can be told: the rerun row holds {row.parts} of suite {suite.id}, "
            "and the claim gives counts only, which do not say which scenarios they count"
        )
    if suite.scenarios is not None and suite.scenarios != len(row.scenarios):
        return f"another scenario set: the claim counts {suite.scenarios} scenarios, the rerun ran {len(row.scenarios)}"
    if result.total != row.total:
        return f"another scenario set: the claim counts {result.total} scenario runs, the rerun ran {row.total}"
    if result.scenarios is not None and set(result.scenarios) != set(row.scenarios):
        only = sorted(set(result.scenarios) - set(row.scenarios))[:5]
        return (
            "another scenario set: the claim's scenarios are not the rerun's "
            f"(claimed only: {', '.join(only) or 'none'})"
        )
    return None


def setup_label(found: list[InputDifference]) -> str:
    """ "same", "accepted: threads", or "differs: threads, hardware" (the names not accepted)."""
    refused = sorted({d.name for d in found if not d.accepted})
    if refused:
        return "differs: " + ", ".join(refused)
    return "accepted: " + ", ".join(sorted({d.name for d in found})) if found else "same"


# ---------------------------------------------------------------- outcomes


def judge_claim(
    base: ClaimVerdict, resolved: Resolved, rerun: RerunRow, found: list[InputDifference], options: Options
) -> ClaimVerdict:
    claim, row = resolved.claim, rerun.row
    pairs = paired_outcomes(claim, row)
    identity = transcript_identity(claim, row, options.where) if pairs is not None else None
    categories = category_notes(claim, row)
    notes = base.notes + categories + (flip_notes(claim, row) if pairs is not None else [])
    if pairs is None:
        notes.append(
            "counts only: the claim gives no per-scenario outcomes for the same scenarios, "
            "so its outcomes cannot be paired"
        )
    transcripts_same = identity is None or identity.identical == identity.compared
    not_exact = exactness(options.claimed_setup(resolved), rerun.pins(), found)
    if not_exact is None:
        judgement, rule = (
            judge_exact(pairs, claim.result, row, transcripts_same and not categories),
            exact_rule(identity),
        )
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
        verdict = (
            "REPRODUCED"
            if same
            else "CONSISTENT"
            if judgement.within and (transcripts_same or not options.require_identical)
            else "DIFFERENT"
        )
        judgement = judgement.model_copy(update={"test": "identical"}) if same else judgement
        tolerance, rule = (
            f"{tolerance_used.describe()} ({told})",
            f"the tolerance test, since the setup is not exact ({not_exact})",
        )
    if pairs is None and verdict != "DIFFERENT":  # equal counts do not show equal outcomes
        verdict = "CONSISTENT (COUNTS ONLY)"
    elif verdict in PASSING and any(not d.accepted for d in found):
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
    return (
        "identity: the same exact setup (CPU, the same threads, one slot, the same prompt cache off or per scenario, "
        "the same build, "
        f"model and harness) promises identical {what}"
    )


def applied_tolerance(claim: Claim, setup: Setup, rerun: RerunRow) -> tuple[Tolerance, str]:
    """The claim's own tolerance, else its setup's, else the rerun profile's, else the default."""
    for tolerance, where in (
        (claim.tolerance, "stated by the claim"),
        (setup.tolerance, "stated by the claim's setup"),
    ):
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
                    f"scenario {scenario} repeat {repeat + 1}: transcript differs "
                    f"({told or f'sha256 {claimed[:12]} claimed, {again[:12]} rerun'})"
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
