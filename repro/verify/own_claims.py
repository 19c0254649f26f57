"""Our own rows stated as claims: `repro claims from-results` (every scenario's outcome and
transcript sha256), and `repro verify --published`, which states the published rows so and
verifies them as any claims file."""

from __future__ import annotations

import datetime
from collections.abc import Collection
from pathlib import Path

from pydantic import ValidationError

from repro.bundle.layout.names import MANIFEST
from repro.core.errors import BadInput
from repro.core.files import sha256_file
from repro.core.terminal import printable
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
    cross_check,
)
from repro.spec.engines import UNRECORDED_KIND
from repro.verify.rerun_rows import Collected, Rerun, RerunRow, load_published_rows, load_rerun


def published_claims(path: Path, collected: Collected | None = None) -> tuple[LoadedClaims, dict[str, str]]:
    """Published numbers (a results.json, or the published bundle) stated as claims, the way `repro
    claims from-results` states them, and each claim's published row key: `--published` is
    verified as any claims file is (`collected`: the bundle's collect_with_cells, when at hand)."""
    side = load_rerun([path], collected) if path.is_dir() else load_published_rows(path)
    today = datetime.datetime.now(datetime.UTC).date()
    source = Source.model_construct(
        citation=f"the published numbers {path.name}", path=str(path), url=None, date=today, revision=None
    )
    claims = stated_claims(side, source, path)
    keys = {claim.id: item.row.key for claim, item in zip(claims.claims, side.rows, strict=True)}
    digest = sha256_file(path / MANIFEST if path.is_dir() else path)
    return LoadedClaims(path=path, sha256=digest, claims=claims), keys


def stated_claims(rerun: Rerun, source: Source, path: Path, description: str | None = None) -> ClaimsFile:
    """`claims_from_rerun`, held to what `repro claims validate` holds a claims file to: rows that
    do not state valid claims (none at all, a count out of bounds, an id no claim may have) are
    one line naming the first problem (BadInput), never a validation dump."""
    if not rerun.rows:
        raise BadInput(f"{path}: no VALID row to state as a claim")
    try:
        claims = claims_from_rerun(rerun, source, description)
    except ValidationError as error:
        first = error.errors()[0]
        raise BadInput(not_claims(path, first["loc"], first["msg"])) from None
    problems = cross_check(claims)
    if problems:
        raise BadInput(not_claims(path, *problems[0]))
    return claims


def not_claims(path: Path, loc: tuple, reason: str) -> str:
    """One line: the published side's first problem as a claim, printed as written (no escapes)."""
    where = ".".join(str(part) for part in loc)[:120] or "a row"
    return printable(f"{path}: its rows do not state valid claims ({where}: {reason[:200]})")


def claims_from_rerun(rerun: Rerun, source: Source, description: str | None = None) -> ClaimsFile:
    """A claims file stating a run's VALID rows as they are: the way our own published rows
    become claims (every scenario's outcome and transcript sha256 included)."""
    models: dict[str, ClaimModel] = {}
    setups: dict[str, Setup] = {}
    suites: dict[str, ClaimSuite] = {}
    claims: list[Claim] = []
    for item in rerun.rows:
        row = item.row
        models[row.model] = ClaimModel(
            name=row.model, family=row.family, quant=row.quant, file_size=row.file_size, sha256=row.model_sha256
        )
        setup = setup_of(item)
        name = next((key for key, known in setups.items() if known == setup), None) or _fresh(
            f"{row.engine_id}.{row.profile}", setups
        )
        setups[name] = setup
        suites.setdefault(row.suite, ClaimSuite(id=row.suite, sha256=row.suite_sha256, scenarios=len(row.scenarios)))
        claims.append(claim_of(item, name, {c.id for c in claims}))
    return ClaimsFile(
        format=1, source=source, description=description, models=models, setups=setups, suites=suites, claims=claims
    )


def setup_of(item: RerunRow) -> Setup:
    row, execution, pins = item.row, item.row.execution, item.pins()
    decoding = item.decoding
    return Setup(
        description=f"{row.engine} on the {row.profile} profile",
        engine=ClaimEngine(
            kind=pins.engine_kind or UNRECORDED_KIND,
            build=row.engine_identity,
            variant=pins.engine_variant,  # type: ignore[arg-type]
        ),
        hardware=ClaimHardware(
            description=f"repro profile {row.profile}",
            profile=row.profile,
            accelerator=item.accelerator,
            driver_version=row.hardware.driver_version if row.hardware else None,
            cpu_model=row.cpu_model,
            kernels=row.kernels,
            threads=execution.threads if execution else None,
            slots=execution.slots if execution else None,
            cache_prompt=execution.cache_prompt if execution else None,
        ),
        decoding=ClaimDecoding(
            temperature=decoding.temperature,
            seed=decoding.seed,
            max_tokens=decoding.max_tokens,
            context=decoding.context,
        ),
        harness=ClaimHarness(**item.harness.model_dump()),
        runtime=item.pins().runtime,
    )


def claim_of(item: RerunRow, setup: str, taken: set[str]) -> Claim:
    row = item.row
    name = _fresh(f"{row.model}.{row.protocol}.{row.suite}"[:120], taken)
    scenarios = {
        scenario: ScenarioOutcome(
            passed=outcomes, transcripts=hashes if all(hashes) and len(hashes) == len(outcomes) else None
        )
        for scenario, outcomes in row.scenarios.items()
        for hashes in [row.transcripts.get(scenario, [])]
    }
    template = (
        ClaimTemplate(source=row.chat_template.source, sha256=row.chat_template.sha256) if row.chat_template else None
    )
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
            by_category={
                category: Count(passed=count[0], total=count[1]) for category, count in row.by_category.items()
            },
            scenarios=scenarios,
        ),
    )


def _fresh(name: str, taken: Collection[str]) -> str:
    if name not in taken:
        return name
    return next(f"{name}-{n}" for n in range(2, len(taken) + 3) if f"{name}-{n}" not in taken)
