"""A cell: one model x engine x protocol x suite x repeat on one profile, as the plan makes it and
every later stage reads it (its id hashes what it is, so an id cannot be kept while its content changes)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer, model_validator

from repro.spec.findings import SuiteSelection
from repro.spec.matrix import Decoding, EngineSpec, ModelSpec, Protocol, Suite
from repro.spec.runtimes import RAW_RUNTIME, RuntimeSpec

# Who left a cell out, and why: the matrix's own `exclude` rules and profile list (the author's
# choice); the tool, from the profile, the harness or the chat template (configuration); the
# latency gate, measuring this machine (speed); the engine, failing (fault).
ExclusionKind = Literal["author", "configuration", "speed", "fault"]
EXCLUSION_LABELS = {
    "author": "excluded by the matrix (author)",
    "configuration": "excluded by repro (configuration)",
    "speed": "excluded by repro (speed)",
    "fault": "not scored: the engine failed (fault)",
    "unknown": "excluded (kind not recorded)",
}


def runtime_harness_reason(runtime: RuntimeSpec, harness: str) -> str | None:
    """Why an external harness's suite cannot run through the runtime: the harness drives no such
    runtime with its own code (RuntimeKindFacts.harness_modes); None when it does."""
    if harness in runtime.facts.harness_modes:
        return None
    return f"runtime {runtime.id} plays our harness's scenarios; {harness} drives no {runtime.kind} runtime of its own"


def driven_runtimes(suite: Suite, runtimes: list[RuntimeSpec]) -> list[RuntimeSpec]:
    """The runtimes of a matrix that a suite's external harness drives with its own code (its image
    built on each one's); none for our own suites, whose runtimes our client drives."""
    if suite.external is None:
        return []
    return [r for r in runtimes if not r.raw and runtime_harness_reason(r, suite.external.harness) is None]


def exclusion_label(kind: str | None) -> str:
    """How a table, the check and the plan name an exclusion's kind ("unknown" for a bundle
    written before kinds were recorded whose reason does not say)."""
    return EXCLUSION_LABELS.get(kind or "unknown", EXCLUSION_LABELS["unknown"])


def kind_from_text(reason: str) -> ExclusionKind | None:
    """The kind an older bundle's reason states by its prefix (written before kinds were recorded)."""
    for prefix, kind in (("latency gate:", "speed"), ("configuration:", "configuration"), ("engine", "fault")):
        if reason.startswith(prefix):
            return kind  # type: ignore[return-value]
    return None


class Cell(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    model: ModelSpec
    engine: EngineSpec
    protocol: Protocol
    suite: Suite
    repeat: int
    profile: str
    decoding: Decoding
    excluded: str | None = None
    excluded_kind: ExclusionKind | None = None  # who excluded it, beside `excluded` (why)
    part: int | None = None  # which of the suite's `parts` this cell runs (None: all its scenarios)
    runtime: RuntimeSpec | None = None  # the agent runtime producing each turn (None: raw, our own client)

    @model_validator(mode="after")
    def _part_of_the_suite(self) -> Cell:
        if self.part is not None and not 1 <= self.part <= (self.suite.parts or 0):
            raise ValueError(f"part {self.part} is not one of the suite's {self.suite.parts or 'no'} parts")
        return self

    @model_serializer(mode="wrap")
    def _without_unset_part(self, handler: SerializerFunctionWrapHandler) -> dict:
        """`part` and `runtime` are written only when set, so a cell of a suite without parts, run
        by our own client, dumps as before."""
        data = handler(self)
        if isinstance(data, dict):
            for name in ("part", "runtime"):
                if getattr(self, name) is None:
                    data.pop(name, None)
        return data

    def runtime_reason(self) -> str | None:
        """Why the cell's runtime cannot play it: an external harness that does not drive it, or a
        protocol it does not carry."""
        runtime = self.runtime
        if runtime is None:
            return None
        if self.suite.external is not None and (why := runtime_harness_reason(runtime, self.suite.external.harness)):
            return why
        if self.protocol not in runtime.facts.protocols:
            carried = ", ".join(sorted(runtime.facts.protocols))
            return f"runtime {runtime.id} ({runtime.kind}) carries {carried}, not {self.protocol}"
        return None

    @property
    def driven_runtime(self) -> RuntimeSpec | None:
        """The runtime an external harness drives with its own code in this cell (its image builds
        on the runtime's; the harness's result is the record); None otherwise."""
        return self.runtime if self.suite.external is not None else None

    @property
    def via(self) -> RuntimeSpec:
        """The runtime that produces the cell's turns (raw: our harness's own client)."""
        return self.runtime or RAW_RUNTIME

    @property
    def label(self) -> str:
        """What a person reads: model / protocol / suite (its part, the repeat past the first); the id is the key."""
        part = f" part {self.part} of {self.suite.parts}" if self.part is not None else ""
        via = f" via {self.runtime.id}" if self.runtime is not None else ""
        return f"{self.model.id} / {self.protocol}{via} / {self.suite.id}{part}" + (
            f" / r{self.repeat}" if self.repeat > 1 else ""
        )

    def share(self, selection: SuiteSelection) -> SuiteSelection:
        """The scenarios this cell runs of its suite's `selection`: all of them, or its part."""
        if self.part is None or self.suite.parts is None:
            return selection
        return selection.part(self.part, self.suite.parts)

    @property
    def seed(self) -> int:
        """The seed this repeat's requests carry: the matrix's seed for repeat 1, then seed+1, ...
        (repeats are then distinct samples; the row still names the matrix's seed)."""
        return self.decoding.seed + self.repeat - 1

    @property
    def group(self) -> tuple[str, str]:
        """Cells of one (engine, model) group share one engine boot."""
        return (self.engine.id, self.model.id)
