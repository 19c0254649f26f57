"""The external harnesses a matrix may name, as facts: which pinned releases each one's adapter
was written for, which protocols its cells may carry, how it talks to the engine, and where its
implementation lives (a lazy `"module:object"` entry, repro.core.registry). Nothing here runs:
matrix validation reads these facts and imports no adapter (repro.suites.external holds them)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class HarnessFacts(BaseModel):
    """What validation and the tables need to know of one external harness."""

    model_config = ConfigDict(frozen=True)

    name: str  # the matrix's external.harness
    implementation: str  # "module:object" of its suite kind (repro.suites.base.SuiteKind)
    known_wheels: dict[str, str]  # name==version -> sha256 of the releases its adapter reads
    protocols: frozenset[str]  # the matrix protocols its cells may name (it makes its own requests)
    request_kind: str  # how it talks to the engine, in words
    engine_kinds: frozenset[str] = frozenset({"llama.cpp"})  # it needs an OpenAI-compatible server


HARNESSES: dict[str, HarnessFacts] = {
    "toolcallbench": HarnessFacts(
        name="toolcallbench",
        implementation="repro.suites.external.toolcallbench:ToolCallBench",
        known_wheels={"toolcallbench==1.0.1": "06ef20776c90bd3d80c1e31cb28f2124f946d100f6be65bf5c669ebf2d2c061b"},
        protocols=frozenset({"native_tools"}),
        request_kind="its OpenAI-compatible backend sends tools and reads message.tool_calls",
    ),
}
