"""Hardware profiles (matrix/profiles.yaml): what a cell may run on and what it must find there."""

from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)

from repro.core.config import PROFILES_FILE
from repro.core.errors import BadInput
from repro.core.yamlsource import load_yaml_document, pydantic_problems
from repro.spec.tolerance import Tolerance

GPU_PINS = ("accelerator", "compute_capability", "gpu_memory_mib", "flash_attn")

# The engine's prompt cache: False (off: every request reads its whole prompt), "scenario" (on,
# each scenario starting from an empty cache: exact against the same mode) or True (on across the
# run: a scenario's first request may reuse what the previous one left, an exploration mode).
# Bundles made before the per-scenario mode record booleans only; they read unchanged.
PromptCache = bool | Literal["scenario"]
PER_SCENARIO: Literal["scenario"] = "scenario"


def cache_label(mode: PromptCache) -> str:
    """The mode in words: off, per scenario, or on (across the run)."""
    return "per scenario" if mode == PER_SCENARIO else ("on" if mode else "off")


def cache_exact(mode: PromptCache) -> bool:
    """Whether the mode keeps a scenario's transcript a function of the scenario and the setup
    (off, or per scenario with one slot), whatever ran before it on the engine."""
    return mode is False or mode == PER_SCENARIO


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GateThresholds(Strict):
    max_seconds_per_step: float = Field(gt=0)
    min_tokens_per_second: float = Field(ge=0)


class MemoryWindow(Strict):
    """The GPU memory a profile's device has, in MiB: nvidia-smi's memory.total and the VRAM
    CUDA reports (a little less) both fall inside it; the neighbouring sizes of the same
    product (a 40 GB A100 beside an 80 GB one, an H100 NVL beside an SXM) do not."""

    min: int = Field(gt=0)
    max: int = Field(gt=0)


class Profile(Strict):
    description: str
    accelerator: str | None = Field(description="pattern the engine's GPU name must match; null for CPU")
    memory_gb: float = Field(gt=0)
    compute_capability: str | None = Field(default=None, pattern=r"^\d+\.\d$")
    gpu_memory_mib: MemoryWindow | None = Field(
        default=None, description="the device's memory, matched against nvidia-smi and CUDA's report"
    )
    mig_profile: str | None = Field(
        default=None, description="the MIG slice the profile runs on (e.g. 1g.10gb); null: a whole GPU"
    )
    flash_attn: Literal["on", "off"] | None = Field(
        default=None, description="llama.cpp -fa on a CUDA profile (its default, auto, is chosen per device)"
    )
    engine_variant: Literal["cpu", "cuda"]
    gpu_layers: int = Field(ge=0)
    gpu_count: int = Field(ge=0)
    threads: int | None = Field(
        default=None, ge=1, description="threads per engine; part of a result's identity on CPU"
    )
    slots: int = Field(
        default=1, ge=1, le=64, description="parallel sequences per engine (-np); more than 1 is not exact"
    )
    cache_prompt: PromptCache = Field(
        default=False,
        description="reuse the KV cache of a previous prompt: false, scenario (each scenario starts from an "
        "empty cache: exact against the same mode) or true (across the run: not exact); docs/engines.md, "
        "'The prompt cache'",
    )
    max_model_gb: float = Field(gt=0)
    ready_timeout_s: int = Field(default=600, ge=5)
    step_timeout_s: int = Field(default=300, ge=5)
    gate: GateThresholds
    tolerance: Tolerance | None = Field(
        default=None,
        description="what a rerun on this profile promises against a claim (repro verify --claims): "
        "a test level, or a pass count within k",
    )

    @model_validator(mode="after")
    def _one_slot_per_scenario_cache(self) -> Profile:
        """Several slots batch several scenarios together, so no scenario starts from an empty cache."""
        if self.cache_prompt == PER_SCENARIO and self.slots != 1:
            raise ValueError("cache_prompt: scenario needs slots: 1 (several slots mix scenarios in one batch)")
        return self

    @model_serializer(mode="wrap")
    def _without_unset_tolerance(self, handler: SerializerFunctionWrapHandler) -> dict:
        """`tolerance` is written only when set, so a profile without one dumps (into run.json,
        and against the profile at a commit) exactly as before the field existed."""
        data = handler(self)
        if self.tolerance is None and isinstance(data, dict):
            data.pop("tolerance", None)
        return data

    def missing_gpu_pins(self) -> list[str]:
        """What a CUDA profile leaves unnamed of its device and of the settings llama.cpp would
        otherwise choose per device (docs/engines.md, "GPU profiles"). Not a validator: the
        profiles file at an older commit (which `repro check` loads) may predate these fields,
        so they are required where a GPU engine is built or booted."""
        if self.engine_variant != "cuda":
            return []
        return [name for name in GPU_PINS if getattr(self, name) is None]

    @property
    def gpu(self) -> bool:
        """A profile that runs on a GPU (an accelerator named or GPUs requested)."""
        return self.accelerator is not None or self.gpu_count > 0

    def with_prompt_cache(self, mode: PromptCache | None) -> Profile:
        """The profile as a run with `--prompt-cache` ran it (None: the profile's own mode); per
        scenario on a profile of several slots is refused in one line."""
        if mode is None or mode == self.cache_prompt:
            return self
        if mode == PER_SCENARIO and self.slots != 1:
            raise BadInput(f"--prompt-cache scenario needs one slot; the profile sets {self.slots}")
        return self.model_copy(update={"cache_prompt": mode})

    def accelerator_matches(self, reported: str | None) -> bool:
        if self.accelerator is None:
            return True
        return reported is not None and fnmatchcase(reported.strip(), self.accelerator)


class Profiles(Strict):
    profiles: dict[str, Profile]

    def get(self, name: str) -> Profile:
        if name not in self.profiles:
            raise BadInput(f"unknown profile '{name}' (known: {', '.join(sorted(self.profiles))})")
        return self.profiles[name]


def load_profiles(path: str | Path = PROFILES_FILE) -> Profiles:
    document = load_yaml_document(path)
    try:
        return Profiles.model_validate(document.data)
    except ValidationError as error:
        raise BadInput(f"{path}: invalid profiles", lines=pydantic_problems(document, error)) from None


def is_profiles_file(path: str | Path) -> bool:
    """A profiles file has a single top-level key, `profiles`, holding a mapping."""
    document = load_yaml_document(path)
    return set(document.data) == {"profiles"} and isinstance(document.data["profiles"], dict)
