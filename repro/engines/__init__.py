"""Engine providers: llama.cpp (`llama-server`) and Ollama, behind one interface (`base.Engine`).

What a run calls: `boot_engine(...) -> EngineHandle` and `stop_engine(client, handle)`.
"""

from __future__ import annotations

from typing import Any

from repro.containers.client import DockerClient
from repro.engines.base import Engine, EngineDied, EngineHandle, EngineRefused, boot_engine, stop_engine
from repro.spec.matrix import EngineSpec

__all__ = ["Engine", "EngineDied", "EngineHandle", "EngineRefused", "boot_engine", "engine_for", "engine_class", "stop_engine"]


def engine_class(kind: str) -> type[Engine]:
    if kind == "llama.cpp":
        from repro.engines.llamacpp import LlamaCppEngine

        return LlamaCppEngine
    if kind == "ollama":
        from repro.engines.ollama import OllamaEngine

        return OllamaEngine
    raise ValueError(f"unknown engine kind {kind!r}")


def engine_for(client: DockerClient | None, spec: EngineSpec, *, probe_image: Any, run_id: str, group_id: str | None = None) -> Engine:
    return engine_class(spec.kind)(client, spec, probe_image=probe_image, run_id=run_id, group_id=group_id)
