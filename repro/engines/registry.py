"""Engine kind -> its implementation, and `boot_engine` (the one way a run gets a started engine).
Each kind's class is its row's lazy `"module:object"` entry (repro.spec.engines `ENGINE_KINDS`,
repro.core.registry): the interface (repro.engines.base) never imports an implementation, and
each implementation imports the interface."""

from __future__ import annotations

from typing import Any

from repro.containers.client import DockerClient
from repro.core.registry import load_object
from repro.engines.base import Engine, EngineHandle
from repro.engines.boot import BootSpec
from repro.spec.engines import ENGINE_KINDS
from repro.spec.matrix import EngineSpec


def engine_class(kind: str) -> type[Engine]:
    """The class its row names (imported on first use)."""
    if kind not in ENGINE_KINDS:
        raise ValueError(f"unknown engine kind {kind!r}")
    engine: type[Engine] = load_object(ENGINE_KINDS[kind].implementation)
    return engine


def engine_for(
    client: DockerClient | None, spec: EngineSpec, *, probe_image: Any, run_id: str, group_id: str | None = None
) -> Engine:
    return engine_class(spec.kind)(client, spec, probe_image=probe_image, run_id=run_id, group_id=group_id)


def boot_engine(client: DockerClient, boot: BootSpec) -> EngineHandle:
    """Boot, wait, verify identity and accelerator, load the model, record settings; stop on any failure."""
    engine = engine_for(client, boot.spec, probe_image=boot.probe_image, run_id=boot.run_id, group_id=boot.group_id)
    engine.replica = boot.replica
    return engine.start(boot)
