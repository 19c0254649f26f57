"""The external harnesses a matrix may name, as facts: which pinned releases each one's adapter
was written for, which protocols its cells may carry, how it talks to the engine, and where its
implementation lives (a lazy `"module:object"` entry, repro.core.registry). Nothing here runs:
matrix validation reads these facts and imports no adapter (repro.suites.external holds them).
`HARNESSES` is the one table of the releases each adapter knows (wheels and source archives, by
sha256): the adapters read it through their facts."""

from __future__ import annotations

from typing import Literal

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
    known_archives: dict[str, str] = {}  # sha256 -> what it is, of the source archives it reads (a git pin is read by layout)
    tasks_from: Literal["code", "source"] = "code"  # its tasks: in its wheel (path), or in the suite's own source
    engine_cache_prompt: bool = False  # its requests carry no cache_prompt, so the engine's default (llama.cpp: on) applies
    fixed_decoding: dict[str, float] = {}  # decoding fields it sends itself, which a matrix must agree with


HARNESSES: dict[str, HarnessFacts] = {
    "toolcallbench": HarnessFacts(
        name="toolcallbench",
        implementation="repro.suites.external.toolcallbench:ToolCallBench",
        known_wheels={"toolcallbench==1.0.1": "06ef20776c90bd3d80c1e31cb28f2124f946d100f6be65bf5c669ebf2d2c061b"},
        protocols=frozenset({"native_tools"}),
        request_kind="its OpenAI-compatible backend sends tools and reads message.tool_calls",
    ),
    "tholos": HarnessFacts(
        name="tholos",
        implementation="repro.suites.external.tholos:Tholos",
        known_wheels={},
        # the archive this adapter was written for: the files `tholos bench` needs, tholos 0.1.2 (its
        # results format, its scoring and its summary are read as that version writes them)
        known_archives={"48e6604a17753b65322ba8e73fc03202a1b3811f176e3691f7deb5243609e466": "tholos 0.1.2 runner files (tholos-runner-src.tar.gz)"},
        tasks_from="source",
        engine_cache_prompt=True,
        fixed_decoding={"temperature": 0.0, "max_tokens": 512},
        protocols=frozenset({"json_schema"}),
        request_kind="its own requests: one JSON object per step under a json_schema response_format",
    ),
}
