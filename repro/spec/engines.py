"""What each engine kind is, as facts, in one table (as repro.spec.harnesses is for harnesses):
what the rest of the project needs to know of a kind is read here.

`prompt_cache_switch`: whether the kind's prompt cache follows the profile's `cache_prompt`.
llama.cpp's does (`--no-cache-prompt --cache-ram 0` and `cache_prompt: false` per request). Ollama
0.11.4's runner always reuses the longest prefix it holds (`LoadCacheSlot(seq.inputs, true)` in
runner/llamarunner/runner.go) and no request option turns that off, so an Ollama cell runs, and is
recorded, with its prompt cache on whatever the profile says: not exact (docs/engines.md).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class EngineKindFacts(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: str
    prompt_cache_switch: bool = True  # False: the engine reuses its prompt cache whatever it is asked


ENGINE_KINDS: dict[str, EngineKindFacts] = {
    "llama.cpp": EngineKindFacts(kind="llama.cpp"),
    "ollama": EngineKindFacts(kind="ollama", prompt_cache_switch=False),
    "scripted": EngineKindFacts(kind="scripted"),  # the tests' scripted replies: no cache at all
}


def engine_kind_facts(kind: str) -> EngineKindFacts:
    """A kind's facts; a kind not in the table (an older bundle's) is taken at its word."""
    return ENGINE_KINDS.get(kind, EngineKindFacts(kind=kind))
