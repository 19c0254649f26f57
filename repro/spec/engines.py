"""What each engine kind is, as facts, in one table (as repro.spec.harnesses is for harnesses):
what the rest of the project needs to know of a kind is read here.

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
has no image of its own to build and reads no model file.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class EngineKindFacts(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: str
    prompt_cache_switch: bool = True  # False: the engine reuses its prompt cache whatever it is asked
    template_from_gguf: bool = False
    reports_build: bool = False
    request_line: str | None = None
    composable: bool = False
    in_harness_image: bool = False


ENGINE_KINDS: dict[str, EngineKindFacts] = {
    "llama.cpp": EngineKindFacts(
        kind="llama.cpp",
        template_from_gguf=True,
        reports_build=True,
        request_line=r"launch_slot_: .*\| processing task",
        composable=True,
    ),
    "ollama": EngineKindFacts(
        kind="ollama", prompt_cache_switch=False, request_line=r'\[GIN\] .*POST +"/(?:api/chat|v1/chat/completions)"'
    ),
    # the tests' scripted replies: no cache at all
    "scripted": EngineKindFacts(kind="scripted", in_harness_image=True),
}


def engine_kind_facts(kind: str) -> EngineKindFacts:
    """A kind's facts; a kind not in the table (an older bundle's) is taken at its word."""
    return ENGINE_KINDS.get(kind, EngineKindFacts(kind=kind))
