"""What each engine kind is, as facts, in one table (as repro.spec.harnesses is for harnesses):
what the rest of the project needs to know of a kind is read here, and its class does the rest.
Adding a kind is one row here, one class and its Dockerfile (docs/engines.md, "Adding an engine").

`implementation`: its `Engine` class (repro.engines.base), a lazy `"module:object"` entry
(repro.core.registry): nothing here imports it, and repro.engines.registry loads it when asked.

What it reports, and what the matrix pins (`EngineSpec`'s pin fields): `identity` is the name the
engine reports its identity under (llama.cpp's `/props` build_info, Ollama's `/api/version`
version), which is also the `EngineSpec` field that pins it, and `identity_route` where it
reports it; `fixed_identity` an identity every engine of the kind reports (the scripted engine's),
so there is nothing to pin. `stamped`: a build is stamped with the build's `build_number` and
`build_commit` (llama.cpp's `b<number>-<commit>`), which then needs no pinned identity.
`build_sources`: the `EngineSource` kinds a build may name (None: any). `build_args`: the
Dockerfile's build arguments that stamp the build, each with the `EngineSpec` field it is read
from (dotted). `image_variants`: the variants an image pin serves when it names none.
`gpu_evidence`: the reader of one engine log's proof that it computed on the profile's GPU
(a lazy `"module:object"` entry, `(CudaLog, Profile, profile_name) -> problems`;
repro.engines.gpu reads each kind's log with its own).

`prompt_cache_switch`: whether the kind's prompt cache follows the profile's `cache_prompt`.
llama.cpp's does (`--no-cache-prompt --cache-ram 0` and `cache_prompt: false` per request). Ollama
0.11.4's runner always reuses the longest prefix it holds (`LoadCacheSlot(seq.inputs, true)` in
runner/llamarunner/runner.go) and no request option turns that off, so an Ollama cell runs, and is
recorded, with its prompt cache on whatever the profile says: not exact (docs/engines.md).

`template_from_gguf`: the engine renders the chat template the GGUF embeds (or the matrix pins) and
reports its sha256 and capabilities (llama.cpp's /props): the plan's capability preflight, the
boot preflight and check's template rule read it. Ollama is given an explicit Go template instead.
`reports_build`: the engine reports its build, slot count and thread count (llama.cpp's /props
build_info and total_slots, and `n_threads` in its log), which check holds to the pins.
`request_line`: a regular expression matching the one line the engine's log prints for each
completion request it serves (llama.cpp: `launch_slot_: ... processing task`; Ollama: its HTTP
server's `[GIN] ... POST "/api/chat"` line), so check can count what an engine served; None where
the log does not name each request (the scripted engine).
`composable`: `repro run compose` can write compose files for its cells.
`in_harness_image`: it runs in the run's own harness image (the tests' scripted engine), so it
has no image of its own to build, reads no model file and is pinned by nothing.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, WithJsonSchema

CUDA_LOG = "repro.engines.gpu:log_problems"  # llama.cpp's ggml_cuda_init and load_tensors lines


class EngineKindFacts(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: str
    implementation: str  # "module:object" of its Engine class
    identity: Literal["build_info", "version"] = "build_info"  # reported under this name, pinned in this field
    identity_route: str = "/props"
    fixed_identity: str | None = None
    stamped: bool = False
    build_sources: frozenset[str] | None = None
    build_args: dict[str, str] = {}  # Dockerfile ARG -> the EngineSpec field (dotted) it is set from
    image_variants: tuple[str, ...] = ("cpu",)
    gpu_evidence: str = CUDA_LOG
    prompt_cache_switch: bool = True  # False: the engine reuses its prompt cache whatever it is asked
    template_from_gguf: bool = False
    reports_build: bool = False
    request_line: str | None = None
    composable: bool = False
    in_harness_image: bool = False


ENGINE_KINDS: dict[str, EngineKindFacts] = {
    "llama.cpp": EngineKindFacts(
        kind="llama.cpp",
        implementation="repro.engines.llamacpp:LlamaCppEngine",
        stamped=True,
        build_args={"LLAMA_BUILD_NUMBER": "build.build_number", "LLAMA_BUILD_COMMIT": "build.build_commit"},
        template_from_gguf=True,
        reports_build=True,
        request_line=r"launch_slot_: .*\| processing task",
        composable=True,
    ),
    "ollama": EngineKindFacts(
        kind="ollama",
        implementation="repro.engines.ollama:OllamaEngine",
        identity="version",
        identity_route="/api/version",
        build_sources=frozenset({"go"}),
        build_args={"OLLAMA_VERSION": "version"},
        image_variants=("cpu", "cuda"),
        gpu_evidence="repro.engines.gpu:ollama_log_problems",  # its `inference compute` line
        prompt_cache_switch=False,
        request_line=r'\[GIN\] .*POST +"/(?:api/chat|v1/chat/completions)"',
    ),
    # the tests' scripted replies (harness.testing.scripted_engine): no cache at all
    "scripted": EngineKindFacts(
        kind="scripted",
        implementation="repro.engines.scripted:ScriptedEngine",
        fixed_identity="scripted-engine",  # the build_info its /props reports
        in_harness_image=True,
    ),
}


# the kind of a results.json or a row made before the kind was recorded (the one kind there was then)
UNRECORDED_KIND = "llama.cpp"


def engine_kind_facts(kind: str) -> EngineKindFacts:
    """A kind's facts; a kind not in the table (an older bundle's) is taken at its word."""
    return ENGINE_KINDS.get(kind) or EngineKindFacts(kind=kind, implementation="")


def known_kind(kind: str) -> str:
    """A kind of the table (what a matrix or a claim may name)."""
    if kind not in ENGINE_KINDS:
        *others, last = map(repr, ENGINE_KINDS)  # worded as a Literal's error reads in a file's problems
        raise ValueError(f"input should be {' or '.join(filter(None, [', '.join(others), last]))}")
    return kind


# The one type of a kind's name: a string of the table's keys (the JSON Schema lists them).
EngineKind = Annotated[str, AfterValidator(known_kind), WithJsonSchema({"enum": list(ENGINE_KINDS), "type": "string"})]
