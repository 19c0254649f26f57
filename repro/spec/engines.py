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
    composable: bool = False
    in_harness_image: bool = False


ENGINE_KINDS: dict[str, EngineKindFacts] = {
    "llama.cpp": EngineKindFacts(kind="llama.cpp", template_from_gguf=True, reports_build=True, composable=True),
    "ollama": EngineKindFacts(kind="ollama", prompt_cache_switch=False),
    # the tests' scripted replies: no cache at all
    "scripted": EngineKindFacts(kind="scripted", in_harness_image=True),
}


def engine_kind_facts(kind: str) -> EngineKindFacts:
    """A kind's facts; a kind not in the table (an older bundle's) is taken at its word."""
    return ENGINE_KINDS.get(kind, EngineKindFacts(kind=kind))
