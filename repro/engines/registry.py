"""Engine kind -> its implementation, and `boot_engine` (the one way a run gets a started engine),
as lazy `"module:object"` entries (repro.core.registry): the interface (repro.engines.base) never
imports an implementation, and each implementation imports the interface."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repro.containers.client import DockerClient
from repro.core.registry import load_object
from repro.engines.base import Engine, EngineHandle
from repro.spec.matrix import Decoding, EngineSpec, ModelSpec
from repro.spec.profiles import Profile

ENGINES = {
    "llama.cpp": "repro.engines.llamacpp:LlamaCppEngine",
    "ollama": "repro.engines.ollama:OllamaEngine",
    "scripted": "repro.engines.scripted:ScriptedEngine",
}


def engine_class(kind: str) -> type[Engine]:
    if kind not in ENGINES:
        raise ValueError(f"unknown engine kind {kind!r}")
    engine: type[Engine] = load_object(ENGINES[kind])
    return engine


def engine_for(
    client: DockerClient | None, spec: EngineSpec, *, probe_image: Any, run_id: str, group_id: str | None = None
) -> Engine:
    return engine_class(spec.kind)(client, spec, probe_image=probe_image, run_id=run_id, group_id=group_id)


@dataclass(frozen=True)
class BootSpec:
    """What one engine boot needs: the engine and its image, the probe image (the harness's), the
    model and its file, the profile (and its name) and decoding, and whose engine it is (the run,
    the (engine, model) group, which of the group's replicas)."""

    spec: EngineSpec  # as given: a pin that is wrong is the engine's to refuse after boot (not revalidated here)
    image: Any  # an ImageRef (repro.store.images), or an image id
    probe_image: Any
    model: ModelSpec
    gguf: Path
    profile: Profile
    profile_name: str
    decoding: Decoding
    run_id: str
    group_id: str | None = None
    replica: int = 0


def boot_engine(client: DockerClient, boot: BootSpec) -> EngineHandle:
    """Boot, wait, verify identity and accelerator, load the model, record settings; stop on any failure."""
    engine = engine_for(client, boot.spec, probe_image=boot.probe_image, run_id=boot.run_id, group_id=boot.group_id)
    engine.replica = boot.replica
    return engine.start(boot.image, boot.model, boot.gguf, boot.profile, boot.profile_name, boot.decoding)
