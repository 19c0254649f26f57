"""A claims file: someone's published table, stated as data that a rerun can be verified against.

A paper, a README or our own `results.json` says "model M, on engine E, through harness H,
under protocol P, on suite S, on hardware X, passed k of n". A claims file states each such
sentence in fields, never in comments: where it was read (`source`: citation, URL, date), the
models (name, quant, file size, the GGUF's sha256 when known), the setups (engine and build,
hardware, decoding, the harness and its version), the suites (id, version or sha256, scenario
count), and one claim per row: its numbers (passed of N, optionally per category, optionally
per scenario with each transcript's sha256) and, where the source states one, its tolerance.

`load_claims` turns a YAML file into `LoadedClaims` or raises `BadInput` with one
`FILE:LINE field.path: reason` line per problem, through the same machinery as the matrix
(`repro.core.yamlsource`). A claims file comes from anyone, so every field is typed strictly (no
string for a number, no NaN or Infinity), every list and map is bounded, and every reference
between its sections is checked.
"""

from __future__ import annotations

import datetime
import hashlib
import re
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)

from repro.core.errors import BadInput
from repro.core.yamlsource import format_problem, load_yaml_document, pydantic_problems
from repro.spec.engines import EngineKind
from repro.spec.matrix import Commit, Ident, Sha256
from repro.spec.profiles import PromptCache
from repro.spec.tolerance import Tolerance

FORMAT = 1
MAX_CLAIMS = 1000
MAX_SCENARIOS = 10_000  # per claim: a suite far larger than any published one
# A claims file's own bounds, above the YAML defaults (1 MiB, 100,000 values): one claim of
# MAX_SCENARIOS scenarios as `repro claims from-results` states them (about 150 bytes and 11 values
# a scenario, 2 more values a repeat) reads back, with up to about ten repeats.
MAX_CLAIMS_FILE_BYTES = 8 * 1024 * 1024
MAX_CLAIMS_FILE_VALUES = 300_000
MAX_REPEATS = 100
MAX_CATEGORIES = 200
MAX_COUNT = 1_000_000
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:+-]{0,127}$")  # a scenario id or category, as suites spell them
URL = r"^https?://[^\s]{1,2000}$"
PROJECT_PATH = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._/-]{0,299}$")

Text = Annotated[str, Field(min_length=1, max_length=500)]


def _name(value: str) -> str:
    if not NAME.match(value):
        raise ValueError(f"'{value[:80]}' must be 1 to 128 letters, digits, '.', '_', ':', '+' or '-'")
    return value


Name = Annotated[str, AfterValidator(_name)]


def _project_path(value: str) -> str:
    """A relative path that stays inside the project: a claims file never cites a file outside it."""
    if not PROJECT_PATH.match(value) or ".." in value.split("/"):
        raise ValueError(
            f"'{value[:80]}' must be a relative path inside the project (letters, digits, '.', '_', '-', '/'; no '..')"
        )
    return value


ProjectPath = Annotated[str, AfterValidator(_project_path)]


class Strict(BaseModel):
    """Unknown keys refused, types strict (a quoted number is not a number), no NaN or Infinity."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


# ---------------------------------------------------------------- where it was read


class Source(Strict):
    citation: Text = Field(description="who says it, and where: author, document, section")
    url: str | None = Field(default=None, pattern=URL, description="where the reader finds it")
    path: ProjectPath | None = Field(
        default=None, description="or a file of this project it states (relative, inside the project)"
    )
    date: datetime.date = Field(
        strict=False, description="when the source was read (or published, when it says so), YYYY-MM-DD"
    )
    revision: str | None = Field(
        default=None, max_length=200, description="the version read: a commit, a release, a DOI"
    )

    @model_validator(mode="after")
    def _somewhere(self) -> Source:
        if self.url is None and self.path is None:
            raise ValueError("a source names where it is: url, or path (a file of this project)")
        return self

    def describe(self) -> str:
        where = " ".join(part for part in (self.url, self.path) if part)
        return (
            f"{self.citation}, {where}"
            + (f" at {self.revision}" if self.revision else "")
            + f" ({self.date.isoformat()})"
        )


# ---------------------------------------------------------------- what was run


class ClaimModel(Strict):
    name: Text = Field(description="the model as the source names it")
    family: str | None = Field(default=None, max_length=200)
    quant: str = Field(min_length=1, max_length=64, description="e.g. Q4_K_M")
    file_size: int | None = Field(default=None, gt=0, le=10**13, description="the GGUF's size in bytes, when known")
    file_size_gb: float | None = Field(
        default=None, gt=0, le=10_000, description="the size as the source prints it, in GB (10^9 bytes)"
    )
    sha256: Sha256 | None = Field(
        default=None, description="the GGUF's sha256, when known: a rerun matches a claim by these bytes only"
    )
    note: Text | None = None


class ClaimEngine(Strict):
    kind: EngineKind = Field(
        description="scripted: harness.testing.scripted_engine, playing the reference steps pinned as its model"
    )
    build: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="the build or version as the source names it (fdf5818, b11434)",
    )
    variant: Literal["cpu", "cuda"] | None = None


class ClaimHardware(Strict):
    description: Text = Field(description="the machine, in the source's words")
    profile: Ident | None = Field(default=None, description="the repro hardware profile, when it ran under repro")
    accelerator: str | None = Field(
        default=None, max_length=200, description="the GPU's name (nvidia-smi), or null on a CPU"
    )
    driver_version: str | None = Field(default=None, max_length=64, description="the GPU driver's version (nvidia-smi)")
    cpu_model: str | None = Field(default=None, max_length=200, description="the host CPU's model name (/proc/cpuinfo)")
    kernels: str | None = Field(
        default=None,
        max_length=2000,
        description="the instruction set the engine reported it computes with (llama.cpp's system_info features)",
    )
    threads: int | None = Field(default=None, ge=1, le=4096, description="threads per engine")
    slots: int | None = Field(default=None, ge=1, le=64)
    cache_prompt: PromptCache | None = Field(
        default=None, description="false, scenario (each scenario from an empty cache) or true (across the run)"
    )


class ClaimDecoding(Strict):
    temperature: float | None = Field(default=None, ge=0, le=2)
    seed: int | None = Field(default=None, ge=0, le=2**63)
    max_tokens: int | None = Field(default=None, ge=1, le=1_048_576, description="max tokens per step")
    context: int | None = Field(default=None, ge=1, le=16_777_216)


class ClaimHarness(Strict):
    name: Ident = Field(
        description="the harness that scored it: repro (ours), or an external harness by its matrix name "
        "(toolcallbench, tholos)"
    )
    version: str | None = Field(default=None, min_length=1, max_length=100)
    commit: Commit | None = Field(
        default=None, description="the harness's source commit (ours: the project commit of the run)"
    )
    archive_sha256: Sha256 | None = Field(
        default=None, description="the sha256 of the harness's pinned source archive or wheel"
    )
    tree_digest: Sha256 | None = Field(
        default=None,
        description="ours: the sha256 of the harness tree that ran (a run records it); "
        "compared in place of the commit when stated",
    )


class ClaimTemplate(Strict):
    source: str = Field(
        min_length=1,
        max_length=64,
        description="gguf (the GGUF's own), pinned, or explicit (repro's own for the engine: Ollama's Go template)",
    )
    sha256: Sha256 | None = None


class Setup(Strict):
    """Everything of a row but its model, protocol and suite: where and how it ran."""

    description: Text | None = None
    engine: ClaimEngine
    hardware: ClaimHardware
    decoding: ClaimDecoding = ClaimDecoding()
    harness: ClaimHarness
    tolerance: Tolerance | None = Field(default=None, description="the tolerance this setup's claims promise")
    runtime: str | None = Field(
        default=None,
        max_length=200,
        description="who produced the turns: raw (the harness's own client) or an agent runtime as its registry "
        "pins it (package==version, docs/runtimes.md); absent: not stated",
    )

    @model_serializer(mode="wrap")
    def _without_unset_runtime(self, handler: SerializerFunctionWrapHandler) -> dict:
        """`runtime` is written only when stated, so a setup of our own client dumps as before."""
        data = handler(self)
        if self.runtime is None and isinstance(data, dict):
            data.pop("runtime", None)
        return data


class ClaimSuite(Strict):
    id: Ident
    version: str | None = Field(default=None, min_length=1, max_length=100)
    sha256: Sha256 | None = Field(default=None, description="the selected scenario files' sha256 (as repro records it)")
    scenarios: int | None = Field(default=None, ge=1, le=MAX_SCENARIOS)


# ---------------------------------------------------------------- the numbers


class Count(Strict):
    passed: int = Field(ge=0, le=MAX_COUNT)
    total: int = Field(ge=1, le=MAX_COUNT)

    @model_validator(mode="after")
    def _passed_of_total(self) -> Count:
        if self.passed > self.total:
            raise ValueError(f"passed {self.passed} exceeds total {self.total}")
        return self


class ScenarioOutcome(Strict):
    """One scenario's outcome per repeat, and, when known, the sha256 of each transcript."""

    passed: list[bool] = Field(min_length=1, max_length=MAX_REPEATS)
    transcripts: list[Sha256] | None = Field(default=None, min_length=1, max_length=MAX_REPEATS)

    @model_validator(mode="after")
    def _one_per_repeat(self) -> ScenarioOutcome:
        if self.transcripts is not None and len(self.transcripts) != len(self.passed):
            raise ValueError(f"{len(self.transcripts)} transcripts for {len(self.passed)} repeats")
        return self


class RerunIdentity(Strict):
    """What the source says of its own second run: identical transcripts for k of n scenarios."""

    identical: int = Field(ge=0, le=MAX_COUNT)
    of: int = Field(ge=1, le=MAX_COUNT)

    @model_validator(mode="after")
    def _k_of_n(self) -> RerunIdentity:
        if self.identical > self.of:
            raise ValueError(f"identical {self.identical} exceeds {self.of}")
        return self


class ClaimResult(Count):
    by_category: dict[Name, Count] = Field(default={}, max_length=MAX_CATEGORIES)
    scenarios: dict[Name, ScenarioOutcome] | None = Field(
        default=None, max_length=MAX_SCENARIOS, description="per scenario, when the source gives it"
    )
    identical_on_rerun: RerunIdentity | None = Field(
        default=None, description="the source's own second run: identical transcripts for k of n scenarios"
    )

    @model_validator(mode="after")
    def _parts_add_up(self) -> ClaimResult:
        if sum(c.total for c in self.by_category.values()) > self.total:
            raise ValueError("the categories hold more scenarios than total")
        if self.scenarios is not None:
            runs = [outcome for s in self.scenarios.values() for outcome in s.passed]
            if (sum(runs), len(runs)) != (self.passed, self.total):
                raise ValueError(f"the scenarios give {sum(runs)} of {len(runs)}, not {self.passed} of {self.total}")
        return self


class Claim(Strict):
    id: Ident
    model: Ident = Field(description="a key of models")
    setup: Ident = Field(description="a key of setups")
    protocol: Ident = Field(
        description="repro's matrix protocol names: json_schema, native_tools, react, json_prompt (our harness), "
        "json_object (the Tholos runner's JSON mode)"
    )
    suite: Ident = Field(description="a key of suites")
    chat_template: ClaimTemplate | None = None
    result: ClaimResult
    tolerance: Tolerance | None = Field(default=None, description="the tolerance the source states for this row")
    note: Text | None = None


class Unscored(Strict):
    """A model the source names without a score, and why (kept: it is part of what was said)."""

    model: Ident
    setup: Ident
    reason: Text


class ClaimsFile(Strict):
    format: Literal[1] = Field(description="the claims format version")
    source: Source
    description: str | None = Field(default=None, max_length=2000)
    models: dict[Ident, ClaimModel] = Field(min_length=1, max_length=MAX_CLAIMS)
    setups: dict[Ident, Setup] = Field(min_length=1, max_length=MAX_CLAIMS)
    suites: dict[Ident, ClaimSuite] = Field(min_length=1, max_length=MAX_CLAIMS)
    claims: list[Claim] = Field(min_length=1, max_length=MAX_CLAIMS)
    unscored: list[Unscored] = Field(default=[], max_length=MAX_CLAIMS)


class LoadedClaims(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: Path
    sha256: str
    claims: ClaimsFile


# ---------------------------------------------------------------- loading


def load_claims(path: str | Path) -> LoadedClaims:
    """Load and validate a claims file; raise BadInput with one `FILE:LINE field: reason` line per problem."""
    document = load_yaml_document(path, MAX_CLAIMS_FILE_BYTES, values=MAX_CLAIMS_FILE_VALUES)
    try:
        claims = ClaimsFile.model_validate(document.data)
    except ValidationError as error:
        raise BadInput(f"{path}: invalid claims", lines=pydantic_problems(document, error)) from None
    problems = [format_problem(document, loc, reason) for loc, reason in cross_check(claims)]
    if problems:
        raise BadInput(f"{path}: invalid claims", lines=problems)
    return LoadedClaims(path=Path(path), sha256=hashlib.sha256(document.raw).hexdigest(), claims=claims)


def cross_check(claims: ClaimsFile) -> list[tuple[tuple, str]]:
    """What pydantic cannot see: duplicate claim ids, references to unknown keys, a suite's
    scenario count against a claim's total."""
    problems: list[tuple[tuple, str]] = []
    first: dict[str, int] = {}
    for index, claim in enumerate(claims.claims):
        if claim.id in first:
            problems.append(
                (("claims", index, "id"), f"duplicate id '{claim.id}' (first at claims[{first[claim.id]}])")
            )
        first.setdefault(claim.id, index)
        problems += _references(("claims", index), claim.model, claim.setup, claims)
        problems += [(("claims", index, "suite"), reason) for reason in _suite_problems(claim, claims)]
    for index, item in enumerate(claims.unscored):
        problems += _references(("unscored", index), item.model, item.setup, claims)
    return problems


def _references(loc: tuple, model: str, setup: str, claims: ClaimsFile) -> list[tuple[tuple, str]]:
    found = []
    if model not in claims.models:
        found.append(((*loc, "model"), f"unknown model '{model}' (known: {', '.join(sorted(claims.models))})"))
    if setup not in claims.setups:
        found.append(((*loc, "setup"), f"unknown setup '{setup}' (known: {', '.join(sorted(claims.setups))})"))
    return found


def _suite_problems(claim: Claim, claims: ClaimsFile) -> list[str]:
    suite = claims.suites.get(claim.suite)
    if suite is None:
        return [f"unknown suite '{claim.suite}' (known: {', '.join(sorted(claims.suites))})"]
    repeats = max((len(s.passed) for s in (claim.result.scenarios or {}).values()), default=1)
    if suite.scenarios is not None and claim.result.total != suite.scenarios * repeats:
        return [
            f"the claim's total {claim.result.total} is not the suite's {suite.scenarios} scenarios x {repeats} "
            "repeat(s)"
        ]
    return []


def dump_claims(claims: ClaimsFile, header: str = "") -> str:
    """A claims file as YAML that `load_claims` reads back (dates stay dates, unset fields are left out)."""
    data = claims.model_dump(mode="python", exclude_none=True, exclude_defaults=True)
    return header + yaml.safe_dump(data, sort_keys=False, width=160, allow_unicode=True)


def claims_json_schema() -> dict:
    """JSON Schema of the claims format, for editor completion."""
    schema = ClaimsFile.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "repro claims"
    return schema
