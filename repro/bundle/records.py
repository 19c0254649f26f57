"""The records of a result bundle: run.json and each cell's cell.json, as typed models.

A bundle carries `format_version`; `repro check` keeps its rules in a table keyed by it.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, computed_field

from harness.contracts import SandboxAudit, ScenarioResult, TranscriptLine
from repro import __version__
from repro.spec.cells import Cell, ExclusionKind
from repro.spec.engines import engine_kind_facts
from repro.spec.findings import GateResult, GpuDevice, SandboxSettings, TemplateFacts
from repro.spec.matrix import Sha256
from repro.spec.profiles import PER_SCENARIO, Profile, PromptCache, cache_exact, cache_label

# 3: the bundle embeds its matrix (matrix.yaml) and records --only; 4: engine audit and execution;
# 5: the chat templates (run.json chat_templates) and the capability preflight
FORMAT_VERSION = 5
CellStatus = Literal["done", "excluded", "error"]
RunStatus = Literal["running", "complete", "interrupted", "failed"]


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ImageInfo(BaseModel):
    reference: str
    id: str
    key: str | None = None
    pinned_by: Literal["content-key", "digest"]
    labels: dict[str, str] = {}


class IdentityCheck(BaseModel):
    expected: str
    reported: str | None
    matched: bool


class EngineSettings(BaseModel):
    """What the engine reports it runs with (llama.cpp /props, Ollama /api/show), kept as evidence."""

    reported: dict[str, Any] = {}


class SandboxRecord(BaseModel):
    """The hardening Docker really applied to the cell's containers (read back from inspect)."""

    harness: SandboxSettings | None = None
    engine: SandboxSettings | None = None


class CellSummary(BaseModel):
    passed: int
    total: int
    by_category: dict[str, tuple[int, int]]
    engine_faults: int = 0
    failure_types: dict[str, int] = {}

    @classmethod
    def of(cls, results: list[ScenarioResult]) -> CellSummary:
        """Pass counts per category, failure types, and engine faults counted apart."""
        by_category: dict[str, list[int]] = {}
        for result in results:
            counts = by_category.setdefault(result.category, [0, 0])
            counts[0] += result.passed
            counts[1] += 1
        failure_types = Counter(r.failure_type or "unknown" for r in results if not r.passed)
        return cls(
            passed=sum(r.passed for r in results),
            total=len(results),
            by_category={k: (v[0], v[1]) for k, v in sorted(by_category.items())},
            engine_faults=sum(r.engine_fault for r in results),
            failure_types=dict(sorted(failure_types.items())),
        )


class Execution(BaseModel):
    """How a cell's engines computed: threads per engine, slots and prompt cache (the profile's,
    part of a result's identity), and how many engine replicas and harness workers shared the
    scenarios (a choice of the run: replicas at one slot each are exact)."""

    threads: int | None
    slots: int = 1
    cache_prompt: PromptCache = False
    replicas: int = 1
    workers: int = 1

    @classmethod
    def of(
        cls, profile: Profile, replicas: int, engine_kind: str | None = None, *, marks_scenarios: bool = True
    ) -> Execution:
        """The profile's execution as a cell runs it: on an engine kind whose prompt cache cannot be
        turned off, the cache is on across the run whatever the profile says (repro.spec.engines);
        per scenario, a harness that cannot mark a scenario's start (`marks_scenarios`: it sends no
        cache_prompt, so the engine's default applies) runs with the cache off, the engine's default
        in that mode (repro.engines.llamacpp.cache_args)."""
        switch = engine_kind is None or engine_kind_facts(engine_kind).prompt_cache_switch
        mode = profile.cache_prompt
        if mode == PER_SCENARIO and not marks_scenarios:
            mode = False
        return cls(
            threads=profile.threads,
            slots=profile.slots,
            cache_prompt=mode if switch else True,
            replicas=replicas,
            workers=replicas * profile.slots,
        )

    @computed_field  # type: ignore[prop-decorator]
    @property
    def exact(self) -> bool:
        """One slot and no prompt cache, or one per scenario: every scenario computed as it would be
        alone on a fresh engine in the same mode."""
        return self.slots == 1 and cache_exact(self.cache_prompt)

    def label(self) -> str:
        """E.g. "2 threads, 1 slot, prompt cache off" (replicas are left out: they change no result)."""
        threads = (
            "threads unpinned" if self.threads is None else f"{self.threads} thread{'s' if self.threads != 1 else ''}"
        )
        slots = f"{self.slots} slot{'s' if self.slots != 1 else ''}"
        return f"{threads}, {slots}, prompt cache {cache_label(self.cache_prompt)}"


class EngineFault(BaseModel):
    """Why an engine stopped serving a cell, read from Docker when the run noticed."""

    noticed_at: str
    cause: str  # in plain words: stopped while the harness ran, stopped answering, ...
    status: str  # Docker's state then: exited, dead, removed, or running (but not answering)
    exit_code: int | None = None
    oom_killed: bool = False
    error: str | None = None  # Docker's State.Error
    log_tail: str = ""


class HealAttempt(BaseModel):
    """One boot of a fresh engine from the same image and model, with identity check and gate."""

    attempt: int
    healed: bool
    reason: str
    identity: str | None = None
    gate_passed: bool | None = None


class EngineIncident(BaseModel):
    """An engine fault during a cell and what the run did about it."""

    fault: EngineFault
    attempts: list[HealAttempt] = []
    healed: bool = False


class CellRecord(BaseModel):
    cell: Cell
    status: CellStatus
    reason: str | None = None
    # an excluded or failed cell: speed (the gate), configuration (the preflight at boot), fault
    exclusion_kind: ExclusionKind | None = None
    harness_image: ImageInfo | None = None
    engine_image: ImageInfo | None = None
    model_sha256_verified: str | None = None
    engine_identity: IdentityCheck | None = None
    engine_settings: EngineSettings = EngineSettings()
    accelerator: str | None = None
    # each GPU's exact identity from nvidia-smi (GPU profiles; absent in older bundles)
    gpu: list[GpuDevice] | None = None
    sandbox: SandboxRecord = SandboxRecord()
    gate: GateResult | None = None
    suite_ids: list[str] = []
    suite_sha256: str | None = None
    summary: CellSummary | None = None
    files: dict[str, str] = {}
    started_at: str | None = None
    finished_at: str | None = None
    engine_incidents: list[EngineIncident] = []  # engine deaths during this cell, healed or not
    sandbox_audit: SandboxAudit | None = None  # what a container with the harness settings could do
    engine_audit: SandboxAudit | None = None  # what a container with the engine's settings could do (format 4)
    engine_boot_seconds: float | None = None  # create to ready, of the engine the cell ran on (shared by its group)
    harness_seconds: float | None = None  # the harness containers' wall time for the cell's scenarios (of this attempt)
    # scenarios an interrupted attempt finished, kept by --resume: their time is not in harness_seconds
    resumed_kept: list[str] = []
    # the interrupted attempts those scenarios come from, as evidence (repro check recomputes it)
    earlier_attempts: list[EarlierAttempt] = []
    # threads, slots, prompt cache, replicas (absent in older bundles: 1 slot, no cache)
    execution: Execution | None = None
    # the instruction set the engine reports it computes with (llama.cpp's system_info features,
    # "CPU : SSE3 = 1 | AVX2 = 1 | ..."): on a CPU, its kernels decide the sums (absent in older bundles)
    engine_kernels: str | None = None

    @property
    def reported_identity(self) -> str | None:
        """The build the cell's engine reported (None: it never booted, or an older bundle)."""
        return self.engine_identity.reported if self.engine_identity else None

    @property
    def evidenced_kind(self) -> ExclusionKind | None:
        """Who ended a cell that was not scored, as its own record shows: an error is the engine's
        fault; an exclusion with a failed gate is the latency gate's (speed), any other the boot
        preflight's (configuration). None for a cell that ran."""
        if self.status == "error":
            return "fault"
        if self.status == "excluded":
            return "speed" if self.gate is not None and not self.gate.passed else "configuration"
        return None


class MatrixInfo(BaseModel):
    path: str
    name: str
    sha256: str


class RunRecord(BaseModel):
    format_version: int = FORMAT_VERSION
    run_id: str
    status: RunStatus
    matrix: MatrixInfo
    profile: str
    profile_settings: Profile
    source: SourceState
    system: SystemDescription
    planned_cells: list[str]
    excluded_cells: dict[str, str]
    # cell id -> who excluded it (absent in older bundles: read from the recomputed plan)
    excluded_kinds: dict[str, ExclusionKind] = {}
    shard: str | None = None
    only: list[str] = []  # the --only selection, so the plan can be recomputed from the embedded matrix
    # model id -> its template and what it carries (format 5): the plan's preflight
    chat_templates: dict[str, TemplateFacts] = {}
    started_at: str
    finished_at: str | None = None
    leaked_containers: list[str] = []
    # a matrix kept outside the project (paths_from: matrix): its files and their repository
    author: AuthorSource | None = None
    dirty_allowed: bool = False  # started on a dirty tree with --allow-dirty: not a clean-room run from the start
    # every input the run did not make, by reference (absent in older bundles: they carried them)
    inputs: list[InputReference] = []
    # the run's --prompt-cache over its profile's mode (None: the profile's; absent in older bundles)
    prompt_cache: PromptCache | None = None


InputRole = Literal["suite-files", "harness-code", "harness-wheel"]


class InputFile(BaseModel):
    """One file of a referenced input, where the bundle's layout would hold it (a suite's
    `scenarios/<category>/<id>.json` or `fixtures/...`), with its sha256 and size."""

    path: str = Field(max_length=1000)
    sha256: Sha256  # names a file in the input cache: 64 hex digits, never a path
    bytes: int = Field(ge=0)


class InputReference(BaseModel):
    """An input the run did not make: another project's scenario files, harness code or wheel.
    Its bytes are not in the bundle unless `carried` (an author may carry their own suite's files,
    under suites/<id>/); `repro check` finds them by sha256 in the cache or a mirror, and
    `repro suites fetch --from-bundle RUN` fetches them from where they are published."""

    role: InputRole
    suite: str = Field(max_length=200)  # the suite it belongs to
    sha256: Sha256  # of the pinned archive or wheel (suite files: of their source archive)
    # where a reviewer gets it: "PyPI toolcallbench==1.0.1", a repository at a commit, ...
    published: str = Field(max_length=1000)
    carried: bool = False
    files: list[InputFile] = []  # suite files: each one the run read, by path

    @property
    def digest(self) -> str:
        """One sha256 over the files (path, sha256), the name of their resolved copy."""
        listed = "".join(f"{f.path}\0{f.sha256}\n" for f in sorted(self.files, key=lambda f: f.path))
        return hashlib.sha256(listed.encode()).hexdigest()


class AuthorFile(BaseModel):
    """One of the author's files the bundle embeds: its path in the matrix's folder and its sha256."""

    path: str
    sha256: str


class AuthorSource(BaseModel):
    """The author's files outside the project (a matrix with `paths_from: matrix`, its profiles
    file; its scenario folders are embedded and hashed per suite) and, when the matrix's folder is
    in a git repository, that repository's commit and clean state, read as the project's are."""

    folder: str  # the matrix's folder inside its repository ("" at its top; "" too outside git)
    matrix: AuthorFile
    profiles_file: AuthorFile | None = None  # embedded as author-profiles.yaml
    commit: str | None = None  # None: the matrix's folder is not in a git repository
    tree_clean: bool = False
    dirty_files: list[str] = []


class PartialCell(BaseModel):
    """What an interrupted cell's kept scenarios belong to (`cells/.<id>.partial/partial.json`):
    `--resume` keeps them only when the run, the cell and its suite are exactly these."""

    run_id: str
    matrix_sha256: str
    profile: str
    commit: str | None
    harness_digest: str | None
    cell: Cell
    suite_sha256: str
    suite_ids: list[str]
    # what computed the attempt's scenarios: a resume keeps them only on the same engine image,
    # identity and execution settings (threads, slots, prompt cache), and repro check holds the
    # kept record to the cell's
    engine_image_id: str | None = None
    engine_identity: str | None = None
    execution: Execution | None = None
    gpu: list[GpuDevice] | None = None


class EarlierAttempt(BaseModel):
    """An interrupted attempt at a cell whose finished scenarios a resume kept (cell.json
    `earlier_attempts`): its partial record, the sha256 of each scenario it finished (its result
    and transcript, `KeptScenario.digest`), and its engine log, a file of the cell."""

    partial: PartialCell
    finished: dict[str, str]  # scenario id -> KeptScenario.digest of its result and transcript
    engine_log: str  # e.g. attempt-1.engine.log
    # the attempt's harness wall time up to its last finished scenario, by the runner's clock: the
    # seconds of the scenarios kept from it are bound by it (None: not recorded; check refuses them)
    harness_seconds: float | None = None

    def keeping(self, ids: set[str]) -> EarlierAttempt:
        return self.model_copy(update={"finished": {i: d for i, d in self.finished.items() if i in ids}})


class KeptScenario(BaseModel):
    """One finished scenario of an interrupted cell (`cells/.<id>.partial/kept/<scenario>.json`):
    its result and transcript lines as the harness wrote them, and their sha256."""

    result: ScenarioResult
    transcript: TranscriptLine
    sha256: str

    @staticmethod
    def digest(result: ScenarioResult, transcript: TranscriptLine) -> str:
        """Over canonical JSON (keys sorted): the digest names the content, not the layout of
        the file it was read from."""
        pair = [result.model_dump(mode="json"), transcript.model_dump(mode="json")]
        return hashlib.sha256(json.dumps(pair, sort_keys=True, separators=(",", ":")).encode()).hexdigest()

    @classmethod
    def of(cls, result: ScenarioResult, transcript: TranscriptLine) -> KeptScenario:
        return cls(result=result, transcript=transcript, sha256=cls.digest(result, transcript))

    @property
    def intact(self) -> bool:
        return self.result.id == self.transcript.id and self.sha256 == self.digest(self.result, self.transcript)


class HostLock(BaseModel):
    """The hash lock repro's own host environment was installed from (locks/<name>, by
    scripts/common.sh): information beside the commit, not part of any engine's setup."""

    name: str  # e.g. dev-py3.11.txt
    sha256: str
    # where what is installed is not the lock's set: "requests 2.33.0, not 2.32.5", "extra: rich 14.0"
    drift: list[str] = []

    @property
    def label(self) -> str:
        return f"{self.name} {self.sha256[:12]}" + (f" (drifted: {', '.join(self.drift[:3])})" if self.drift else "")


class SourceState(BaseModel):
    commit: str | None
    tree_clean: bool
    dirty_files: list[str] = []
    harness_digest: str | None = None
    repro_version: str = __version__
    host_lock: HostLock | None = None  # None: not installed from a lock of ours (or an older bundle)


class SystemDescription(BaseModel):
    cpu_model: str
    cpu_flags: list[str] = []  # /proc/cpuinfo's flags, sorted (absent in older bundles)
    cpu_cores: int
    memory_gb: float
    os: str
    kernel: str
    machine: str
    docker_engine: str | None
    docker_api: str | None
    storage_driver: str | None
    gpus: list[GpuInfo] = []

    @property
    def setup_label(self) -> str:
        """The host as a setup compares it, in one place for the rerun's preflight and verdict and
        for `results merge`: the CPU model, its cores and architecture, each GPU by name, driver
        and CUDA version. Two hosts are one setup's hardware when their labels are equal."""
        gpus = ", ".join(g.label for g in self.gpus)
        return f"{self.cpu_model}, {self.cpu_cores} cores, {self.machine}" + (f"; GPU {gpus}" if gpus else "")


class GpuInfo(BaseModel):
    name: str
    driver: str | None = None
    memory_mib: int | None = None
    cuda: str | None = None

    @property
    def label(self) -> str:
        """The GPU as a setup names it: its name, driver and CUDA version (a difference in either counts)."""
        return f"{self.name} (driver {self.driver or '-'}, CUDA {self.cuda or '-'})"
