"""What a stage found and a record keeps: the latency gate's verdict, a container's confinement as
read back, what a chat template can carry, a suite's selection. Records only: the stages that
produce them (engines.gate, containers.sandbox, store.chat_template, suites) import them from here,
so the bundle's schema (repro.bundle.records) depends on spec and core alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt

from harness.contracts import GateAttempt
from repro.core.files import GIB

# What a failed latency gate measured (repro.engines.gate `gate_cause`): an engine slower than the
# profile allows on a quiet machine, a machine busy with other work, a model whose reply to the
# probe was not a valid step (a rerun does not change it), an engine that failed, a probe that did.
GateCause = Literal["too_slow", "busy", "invalid_reply", "engine_fault", "probe_failed"]

SANDBOX_UID = 10001  # the user every harness and probe container runs as
SANDBOX_USER = f"{SANDBOX_UID}:{SANDBOX_UID}"


class Noted(str):
    """A check rule's finding that is not a problem: what a VALID verdict took on the bundle's word
    and did not recompute (a model-graded score), said beside the cell's verdict."""


class GateResult(BaseModel):
    passed: bool
    reason: str
    enabled: bool = True
    engine_fault: bool = False
    engine_id: str | None = None
    model_id: str | None = None
    profile: str | None = None
    protocol: str = "json_schema"
    max_seconds_per_step: float | None = None
    min_tokens_per_second: float | None = None
    attempts_required: int | None = None
    warmup: GateAttempt | None = None
    attempts: list[GateAttempt] = []
    passed_attempts: int = 0
    median_seconds: float | None = None
    median_tokens_per_second: float | None = None
    total_seconds: float | None = None
    earlier: list[str] = []  # the reasons of earlier measurements that failed (the gate was retried)
    earlier_requests: list[NonNegativeInt] = []  # the requests each earlier measurement sent (absent in older bundles)
    cause: GateCause | None = None  # what a failed gate measured (None: it passed, or an older bundle)

    @property
    def sent(self) -> int:
        """The requests this measurement sent the engine: its warm-up and its attempts."""
        return len(self.attempts) + (1 if self.warmup is not None else 0)


class MountInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    target: str
    type: str
    read_only: bool


class SandboxSettings(BaseModel):
    """How a container is confined. Built as intent; `read_back` fills it from `container.attrs`."""

    model_config = ConfigDict(frozen=True)

    user: str = SANDBOX_USER
    read_only: bool = True
    cap_drop: list[str] = ["ALL"]
    cap_add: list[str] = []
    security_opt: list[str] = ["no-new-privileges"]
    privileged: bool = False
    pids_limit: int | None = 128
    mem_limit: int | None = 2 * GIB  # bytes
    nano_cpus: int | None = 1_000_000_000
    tmpfs: dict[str, str] = {"/tmp": "rw,nosuid,nodev,size=64m"}
    network_mode: str = "none"
    env: dict[str, str] = Field(default_factory=lambda: {"TZ": "UTC", "PYTHONHASHSEED": "0"})
    labels: dict[str, str] = {}
    mounts: list[MountInfo] = []  # filled by read_back (targets only: host paths are never recorded)
    device_requests: list[dict[str, Any]] = []

    def with_(self, **changes: Any) -> SandboxSettings:
        return self.model_copy(update=changes)


TemplateSource = Literal["gguf", "pinned"]


class TemplateFacts(BaseModel):
    """What a model's chat template can carry, derived on the host; recorded in run.json."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: TemplateSource
    sha256: str
    text: str
    renders_tools: bool
    renders_tool_calls: bool
    end_of_turn: str | None
    eog_tokens: list[str]
    render_error: str | None = None

    @property
    def end_of_turn_is_eog(self) -> bool:
        return self.end_of_turn is not None and self.end_of_turn in self.eog_tokens


class SuiteSelection(BaseModel):
    folder: Path
    ids: list[str]
    categories: dict[str, str]  # id -> category
    sha256: str
    external: str | None = None  # the adapter of an external suite (repro.suites.external); None for scenario files

    def part(self, index: int, parts: int) -> SuiteSelection:
        """Part `index` (1-based) of `parts`: the index-th contiguous slice of the ids, in selection
        order, the first parts one shorter where they do not divide evenly. Its sha256 stays the
        whole selection's: the whole suite's bytes and the part's number fix the part's bytes."""
        if not 1 <= index <= parts:
            raise ValueError(f"part {index} of {parts} does not exist")
        ids = self.ids[(index - 1) * len(self.ids) // parts : index * len(self.ids) // parts]
        return self.model_copy(update={"ids": ids, "categories": {i: self.categories[i] for i in ids}})


class GpuDevice(BaseModel):
    """One GPU as nvidia-smi reports it inside the engine container: its exact identity. cuBLAS
    promises identical results only on the same architecture and SM count: the product name
    fixes the SM count of a whole GPU (nvidia-smi does not report it), the MIG profile that of
    a slice."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    compute_capability: str | None = None  # "7.5"
    driver_version: str | None = None
    memory_mib: int | None = None
    mig_mode: str | None = None  # "Enabled" / "Disabled"; None where the GPU has no MIG
    mig_profile: str | None = None  # "1g.10gb": the slice this container was given

    def label(self) -> str:
        parts = [self.name, f"compute capability {self.compute_capability}" if self.compute_capability else None]
        parts += [
            f"{self.memory_mib} MiB" if self.memory_mib else None,
            f"driver {self.driver_version}" if self.driver_version else None,
        ]
        parts += [f"MIG {self.mig_profile}" if self.mig_profile else None]
        return ", ".join(part for part in parts if part)
