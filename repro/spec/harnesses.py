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
    # sha256 -> what it is, of the source archives it reads (a git pin is read by layout)
    known_archives: dict[str, str] = {}
    tasks_from: Literal["code", "source"] = "code"  # its tasks: in its wheel (path), or in the suite's own source
    # False: its requests carry no cache_prompt, so the server's default applies, which the engine's
    # flags set to the profile's mode (llama.cpp --no-cache-prompt / --cache-prompt). Bundles made
    # before this was known record such cells "prompt cache on" (repro.check.cell_rules.rule_execution).
    sends_cache_prompt: bool = True
    # True: its driver marks each task's start, so a profile's per-scenario prompt cache holds: the
    # task's first request says cache_prompt false and its later ones true. False: the cell runs
    # with the cache off in that mode (repro.bundle.records.Execution.of)
    marks_scenarios: bool = False
    fixed_decoding: dict[str, float] = {}  # decoding fields it sends itself, which a matrix must agree with
    # sha256 -> licence, of the known archives a bundle carries (no public address serves them; the licence lets it)
    carried_archives: dict[str, str] = {}
    # matrix protocol -> the harness's own mode for it (the one place the names are mapped; its adapter passes it)
    protocol_modes: dict[str, str] = {}
    # True: it runs the task the suite names (external.task, with task_args and roles), on the samples
    # the suite's ids name (inspect: one task of a pinned package; its samples are not files of the wheel)
    runs_named_task: bool = False
    # engine API (an engine class's `api`: "openai", "ollama") -> the harness's own backend for it, the
    # one place the names are mapped; an engine whose API is not here serves it nothing (its adapter refuses)
    backends: dict[str, str] = {"openai": "openai"}  # an OpenAI-compatible server (/v1)


# The matrix protocols `tholos bench` runs, each as its own `--json-mode`: a json_schema
# response_format (its default, the published T4 and CPU llama.cpp rows), or a json_object one (its
# JSON mode, the published Ollama rows).
THOLOS_JSON_MODES = {"json_schema": "schema", "json_object": "object"}

# Local Agent Bench's runtimes, by matrix protocol: its raw loop over Ollama in react mode (its CLI
# runtimes, which a matrix runtime plays, are in each runtime kind's row: RuntimeKindFacts.harness_modes)
LAB_RUNTIMES = {"react": "raw-ollama-react"}

HARNESSES: dict[str, HarnessFacts] = {
    "toolcallbench": HarnessFacts(
        name="toolcallbench",
        implementation="repro.suites.external.toolcallbench:ToolCallBench",
        known_wheels={"toolcallbench==1.0.1": "06ef20776c90bd3d80c1e31cb28f2124f946d100f6be65bf5c669ebf2d2c061b"},
        protocols=frozenset({"native_tools"}),
        request_kind="its OpenAI-compatible backend (or, on Ollama, its own `ollama` backend: /api/chat) sends "
        "tools and reads message.tool_calls",
        engine_kinds=frozenset({"llama.cpp", "ollama"}),
        backends={"openai": "openai-compat", "ollama": "ollama"},
        marks_scenarios=True,  # images/toolcallbench/driver.py wraps each task's run
    ),
    "tholos": HarnessFacts(
        name="tholos",
        implementation="repro.suites.external.tholos:Tholos",
        known_wheels={},
        # the archive this adapter was written for: the files `tholos bench` needs, tholos 0.1.2 (its
        # results format, its scoring and its summary are read as that version writes them)
        known_archives={
            "48e6604a17753b65322ba8e73fc03202a1b3811f176e3691f7deb5243609e466": "tholos 0.1.2 runner files "
            "(tholos-runner-src.tar.gz)",
            # tests only (tests/external/tholos-standin.yaml): our own program with the runner's interface
            "ff9512b8fdf7517e3bca9128c71041280189c4b8901c4a5db150f4afcf0473ec": (
                "the repro project's stand-in for its tests (tests/standins/tholos_runner/), not Tholos-Bench's runner"
            ),
        },
        carried_archives={"48e6604a17753b65322ba8e73fc03202a1b3811f176e3691f7deb5243609e466": "Apache-2.0"},
        tasks_from="source",
        sends_cache_prompt=False,
        fixed_decoding={"temperature": 0.0, "max_tokens": 512},
        engine_kinds=frozenset({"llama.cpp", "scripted"}),  # scripted: its reference claim (docs/external-suites.md)
        protocols=frozenset(THOLOS_JSON_MODES),
        protocol_modes=THOLOS_JSON_MODES,
        request_kind="its own requests: one JSON object per step under a json_schema (or, its JSON mode, "
        "a json_object) response_format",
    ),
    "inspect": HarnessFacts(
        name="inspect",
        implementation="repro.suites.external.inspect_task:Inspect",
        known_wheels={
            "inspect-evals==0.26.0": "b76d15813182807da141a0f06bb6f18a5f82d1f06291ec2633bb84cdf661f8d0",
            # an author's own task file (task: FILE.py@name) runs on inspect_ai itself
            "inspect-ai==0.3.285": "4658e36773e9d78116a69a3eb066f47698aa7ea9fc1c0146927a86f02b455aa6",
        },
        protocols=frozenset({"native_tools"}),
        request_kind="inspect_ai's OpenAI-compatible provider: tools in the request, message.tool_calls in the reply",
        sends_cache_prompt=False,
        runs_named_task=True,
        engine_kinds=frozenset({"llama.cpp", "ollama"}),
        backends={"openai": "openai", "ollama": "openai"},  # Ollama serves an OpenAI-compatible /v1 too
    ),
    "lab": HarnessFacts(
        name="lab",
        implementation="repro.suites.external.lab:Lab",
        known_wheels={},
        known_archives={
            # tests only (tests/external/lab-standin.yaml): our own program with LAB's command line and result file
            "39722d3c187677e1dc2d84cefedf0ce93151383d26b011c9b5c18ccdd5c308a9": (
                "the repro project's stand-in for its tests (tests/standins/local_agent_bench/), not Local Agent Bench"
            ),
        },
        protocols=frozenset(LAB_RUNTIMES),
        protocol_modes=LAB_RUNTIMES,
        request_kind="its own requests to Ollama's /api/chat (stream false, temperature 0 only); the model writes "
        "Action / Action Input text, LAB runs the tools",
        engine_kinds=frozenset({"ollama"}),
        backends={"ollama": "ollama"},
        tasks_from="code",
        sends_cache_prompt=False,
        fixed_decoding={"temperature": 0.0},
    ),
}


class HarnessPin(BaseModel):
    """The harness that scored a row, and what pins its code: ours by the project commit and the
    sha256 of the harness tree (the code that ran in the harness image: what the verdict
    compares; the commit also covers the orchestrator and the docs); an external one by its
    pinned wheel's version and sha256, or its source archive's sha256."""

    name: str  # "repro", or the matrix's external.harness
    version: str | None = None
    commit: str | None = None
    tree_digest: str | None = None
    archive_sha256: str | None = None
