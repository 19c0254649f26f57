"""The scripted engine (`kind: scripted`): `python -m harness scripted-engine`, sealed like any engine.

It stands in for a model where a claim needs none: it answers each request with the next
reference step of the scenario the request belongs to (harness.testing.scripted_engine), in the wire
format the request asks for (our protocols, and Tholos-Bench's runner's own step). Its "model"
is the scenario archive it plays, pinned by sha256 like any GGUF and mounted read-only where a
GGUF would be; it runs in the run's own harness image (so `repro check`'s harness-image rule
covers its code), on the loopback of a container with no network. Its identity is the
`build_info` its `/props` reports (its row's `fixed_identity`, repro.spec.engines), read as llama.cpp's is.
"""

from __future__ import annotations

from typing import Any

from repro.containers.sandbox import bind, create_kwargs
from repro.engines.base import MODEL_MOUNT, EngineHandle
from repro.engines.boot import BootSpec
from repro.engines.llamacpp import LlamaCppEngine
from repro.spec.findings import GpuDevice
from repro.spec.profiles import Profile

PORT = 8080  # as llama.cpp's (LlamaCppEngine.port)
PACE = "1000"  # tokens per second: replies paced so that their timings are real durations within check's bounds


def scripted_argv(port: int = PORT) -> list[str]:
    """The harness image's command: serve the archive mounted as the model on the loopback."""
    return ["scripted-engine", "--scenarios", MODEL_MOUNT, "--host", "127.0.0.1", "--port", str(port), "--pace", PACE]


class ScriptedEngine(LlamaCppEngine):
    """Identity and settings from `/props`, as llama.cpp's (the scripted server serves the same routes)."""

    kind = "scripted"  # port, API and health route: llama.cpp's

    def container_kwargs(
        self, launch: BootSpec, *, host_cpus: int | None = None, name: str | None = None
    ) -> dict[str, Any]:
        mounts = [bind(launch.gguf, MODEL_MOUNT, read_only=True)]
        return create_kwargs(
            self.sandbox_settings(launch.profile, host_cpus),
            launch.image,
            scripted_argv(self.port),
            name=name,
            mounts=mounts,
            working_dir="/tmp",
        )

    def verify_device(
        self,
        handle: EngineHandle,
        profile: Profile,
        profile_name: str,
        devices: list[GpuDevice],
        model_bytes: int | None = None,
    ) -> None:
        return None  # it computes nothing on any device (not llama.cpp's check of its CUDA log)
