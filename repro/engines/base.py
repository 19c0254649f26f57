"""The engine interface: boot a pinned engine container sealed, wait for it, check it is what the
matrix pins, record what it really runs with, stop it.

`boot_engine(...)` is what a run calls for each (engine, model) group: it creates the container
(network none, non-root, read-only root, the GGUF mounted read-only), waits for readiness through
a probe container joined to the engine's namespace, checks the engine's identity against
`EngineSpec.expected_identity()` and the accelerator against the profile, loads the model where
the engine needs that (Ollama), records the effective settings and returns an `EngineHandle`. Any
failure stops the engine before the error propagates. `stop_engine(client, handle)` always
succeeds (call it in `finally`).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

from harness.contracts import ProbeResult, ReadyResult, SandboxAudit
from repro.containers import lifecycle as containers
from repro.containers.client import Container, DockerClient
from repro.containers.sandbox import (
    EngineDied,
    ProbeUnreachable,
    image_id,
    read_back,
    run_probe,
)
from repro.core.errors import ReproError
from repro.core.files import short_error
from repro.engines.boot import BootSpec
from repro.engines.devices import check_accelerator, check_devices, host_cpus_of, parse_or_refuse
from repro.engines.errors import EngineRefused
from repro.engines.gpu import LIST_ARGV, QUERY_ARGV, with_mig
from repro.spec.findings import GpuDevice, SandboxSettings, TemplateFacts
from repro.spec.matrix import Decoding, EngineSpec, ModelSpec
from repro.spec.profiles import Profile
from repro.store.chat_template import protocol_blocker

__all__ = [
    "MODEL_MOUNT",
    "Engine",
    "EngineHandle",
    "client_argv",
    "stop_engine",
]

MODEL_MOUNT = "/models/model.gguf"
PROBE_SLACK_S = 60
NVIDIA_SMI_BYTES = 64 * 1024  # what is read of nvidia-smi's output in an engine container

R = TypeVar("R", bound=ProbeResult)


class EngineHandle(BaseModel):
    """A running, ready, verified engine: what the gate, the harness and the results need."""

    model_config = ConfigDict(frozen=True)

    engine_id: str
    kind: str
    container_id: str
    container_name: str
    image_reference: str
    image_id: str
    probe_image_id: str
    port: int
    base_url: str  # as seen inside the engine's namespace
    model_id: str
    model_sha256: str
    model_name: str  # what the harness sends as "model"
    api: str  # "openai" (llama.cpp) or "ollama": which harness client talks to it
    identity: str
    expected_identity: str
    settings: dict[str, Any] = {}
    accelerator: str | None = None
    gpu: list[GpuDevice] = []  # each GPU's exact identity (nvidia-smi), on GPU profiles
    profile: str
    run_id: str
    group_id: str | None = None
    sandbox: SandboxSettings
    command: list[str] = []
    boot_seconds: float | None = None  # create to ready
    # the sandbox audit with this engine's settings (repro.containers.audit.audit_engine)
    audit: SandboxAudit | None = None
    kernels: str | None = None  # the instruction set the engine reports it computes with (Engine.kernels)

    def client_argv(self) -> list[str]:
        """How a harness-image container inside the namespace talks to this engine."""
        return client_argv(self.base_url, self.model_name, self.api)


def client_argv(base_url: str, model_name: str, api: str) -> list[str]:
    """The harness's arguments that name an engine: where it listens, which model, which API."""
    return ["--base-url", base_url, "--model", model_name, "--api", api]


class Engine(ABC):
    """One engine kind. An instance is bound to a Docker client, the probe image and a run id."""

    kind: str = ""
    port: int = 0
    api: str = "openai"
    health_path: str = "/health"
    replica: int = 0  # which of its group's replicas an engine is (its GPUs: gpu_device_requests)

    @classmethod
    def preflight(cls, model: ModelSpec, protocol: str, facts: TemplateFacts | None) -> str | None:
        """The capability preflight: why this engine cannot carry `protocol` for `model` (a
        configuration exclusion, never the model's failure); None when it can. llama.cpp shows the
        model its GGUF's (or the pinned) chat template, whose facts say what it carries."""
        return protocol_blocker(facts, protocol) if facts is not None else None

    @classmethod
    def served_template(cls, reported: dict[str, Any]) -> str | None:
        """The chat template's text as the engine reported it, where the engine shows the model
        repro's own template for its family (Ollama's Go template) rather than the GGUF's or a
        pinned one (those are run.json `chat_templates`); None here."""
        return None

    def __init__(
        self,
        client: DockerClient | None,
        spec: EngineSpec,
        *,
        probe_image: Any,
        run_id: str,
        group_id: str | None = None,
    ) -> None:
        self._client = client  # None only where nothing is started (compose writes the create arguments)
        self.spec = spec
        self.probe_image_id = image_id(client, probe_image)
        self.run_id = run_id
        self.group_id = group_id
        self.boot_kwargs: dict[str, Any] = {}  # what the last boot created its container with

    @property
    def client(self) -> DockerClient:
        if self._client is None:
            raise ReproError(f"engine {self.spec.id}: no Docker client (this engine only describes its containers)")
        return self._client

    # ------------------------------------------------ what each kind defines

    @abstractmethod
    def container_kwargs(
        self, launch: BootSpec, *, host_cpus: int | None = None, name: str | None = None
    ) -> dict[str, Any]:
        """`containers.create(...)` keyword arguments for this engine (no Docker call); `launch.image`
        is the image id."""

    @abstractmethod
    def model_name(self, model: ModelSpec) -> str: ...

    @abstractmethod
    def identity(self, handle: EngineHandle) -> str:
        """What the running engine reports: llama.cpp build_info, Ollama version."""

    @abstractmethod
    def effective_settings(self, handle: EngineHandle) -> dict[str, Any]: ...

    def kernels(self, handle: EngineHandle, profile: Profile) -> str | None:
        """The instruction set the engine reports it computes with (on a CPU its kernels, not the
        CPU's name, decide the sums); None where the kind reports none."""
        return None

    def prepare_model(self, handle: EngineHandle, launch: BootSpec) -> dict[str, Any]:
        """Make the model servable (Ollama uploads and creates it); returns what to record."""
        return {}

    # ------------------------------------------------ common lifecycle

    def boot_spec(
        self, image: Any, model: ModelSpec, gguf: Path, profile: Profile, decoding: Decoding, *, profile_name: str
    ) -> BootSpec:
        """A boot of this engine (its spec, probe image, run, group and replica) with these launch settings."""
        return BootSpec(
            spec=self.spec,
            image=image,
            probe_image=self.probe_image_id,
            model=model,
            gguf=gguf,
            profile=profile,
            profile_name=profile_name,
            decoding=decoding,
            run_id=self.run_id,
            group_id=self.group_id,
            replica=self.replica,
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def container(self, handle: EngineHandle) -> Container:
        return self.client.containers.get(handle.container_id)

    def probe(
        self, handle: EngineHandle, argv: list[str], result_type: type[R], *, timeout: float, mounts: list | None = None
    ) -> R:
        """Run the probe action `argv[0]` in the engine's namespace; its result as `result_type`."""
        container = self.container(handle)
        return run_probe(
            self.client,
            self.probe_image_id,
            container,
            argv,
            result_type,
            run_id=self.run_id,
            cell_id=self.group_id,
            timeout=timeout,
            mounts=mounts,
        )

    def boot(self, launch: BootSpec) -> EngineHandle:
        """Create and start the sealed engine container (not yet waited for or verified)."""
        from repro.containers.sandbox import container_name

        image, model = launch.image, launch.model
        resolved = image_id(self.client, image)
        reference = getattr(image, "reference", None) or getattr(image, "name", None) or self.spec.image or resolved
        kwargs = self.container_kwargs(
            replace(launch, image=resolved),
            host_cpus=host_cpus_of(self.client),
            name=container_name(self.run_id, "engine", self.spec.id),
        )
        self.boot_kwargs = kwargs  # the audit reuses them (audit_sandbox)
        try:
            container = containers.start(self.client, kwargs)
        except Exception as error:
            raise EngineDied(f"engine {self.spec.id} did not start: {short_error(error)}") from None
        return EngineHandle(
            engine_id=self.spec.id,
            kind=self.kind,
            container_id=container.id,
            container_name=container.name,
            image_reference=str(reference),
            image_id=resolved,
            probe_image_id=self.probe_image_id,
            port=self.port,
            base_url=self.base_url,
            model_id=model.id,
            model_sha256=model.sha256,
            model_name=self.model_name(model),
            api=self.api,
            identity="",
            expected_identity=self.spec.expected_identity(),
            profile=launch.profile_name,
            run_id=self.run_id,
            group_id=self.group_id,
            sandbox=read_back(container),
            command=list(kwargs.get("command") or []),
        )

    def wait_ready(self, handle: EngineHandle, timeout: float) -> float:
        """Poll the health path from inside the namespace; seconds until ready, or EngineDied."""
        try:
            argv = ["ready", "--base-url", self.base_url, "--timeout", f"{timeout:g}", "--path", self.health_path]
            result = self.probe(handle, argv, ReadyResult, timeout=timeout + PROBE_SLACK_S)
        except ProbeUnreachable as error:
            raise EngineDied(
                f"engine {self.spec.id} never answered on {self.base_url}{self.health_path} within {timeout:g}s: "
                f"{error}",
                log_tail=containers.log_tail(self.container(handle)),
            ) from None
        if not result.ready:
            raise EngineDied(
                f"engine {self.spec.id} not ready within {timeout:g}s: {result.error}",
                log_tail=containers.log_tail(self.container(handle)),
            )
        return result.seconds

    def gpu_devices(self, handle: EngineHandle, profile: Profile) -> list[GpuDevice]:
        """The GPUs the engine container sees, with their exact identity (nvidia-smi by exec:
        name, compute capability, driver, memory, MIG slice); none on CPU profiles."""
        if not profile.gpu:
            return []
        devices = parse_or_refuse(self.spec.id, self.nvidia_smi(handle, QUERY_ARGV))
        if any(device.mig_mode == "Enabled" for device in devices):
            devices = with_mig(devices, self.nvidia_smi(handle, LIST_ARGV))
        return devices

    def nvidia_smi(self, handle: EngineHandle, argv: list[str]) -> str:
        """nvidia-smi's output in the engine container (bounded), or EngineRefused."""
        container = self.container(handle)
        try:
            code, output = container.exec_run(argv, user="", demux=False)
        except Exception as error:
            raise EngineRefused(
                f"engine {self.spec.id}: cannot read the accelerator (nvidia-smi by exec failed: {short_error(error)})"
            ) from None
        text = (output or b"")[:NVIDIA_SMI_BYTES].decode("utf-8", errors="replace").strip()
        if code != 0 or not text:
            raise EngineRefused(
                f"engine {self.spec.id}: nvidia-smi in the engine container failed (exit {code}): {text[:200]}"
            )
        return text

    def accelerator(self, handle: EngineHandle, profile: Profile) -> str | None:
        """The GPU name(s) the engine container sees, or None on CPU profiles."""
        devices = self.gpu_devices(handle, profile)
        return ", ".join(device.name for device in devices) or None

    def verify_device(
        self,
        handle: EngineHandle,
        profile: Profile,
        profile_name: str,
        devices: list[GpuDevice],
        model_bytes: int | None = None,
    ) -> None:
        """Refuse an engine that does not compute on the profile's device (each kind reads its
        own evidence: llama.cpp its CUDA log lines and the weights in device memory); Ollama loads
        its model after boot, so its log is judged by repro check (rule gpu-evidence)."""
        return None

    def start(self, launch: BootSpec) -> EngineHandle:
        """Boot, wait, verify identity and accelerator, load the model, record settings; stop on any failure."""
        started = time.monotonic()
        profile, profile_name = launch.profile, launch.profile_name
        handle = self.boot(launch)
        try:
            self.wait_ready(handle, profile.ready_timeout_s)
            boot_seconds = time.monotonic() - started
            reported = self.identity(handle)
            expected = self.spec.expected_identity()
            if reported != expected:
                raise EngineRefused(
                    f"engine {self.spec.id} reports {self.spec.facts.identity} '{reported}', "
                    f"the matrix pins '{expected}'; refused"
                )
            devices = self.gpu_devices(handle, profile)
            accelerator = ", ".join(device.name for device in devices) or None
            check_accelerator(self.spec.id, accelerator, profile, profile_name)
            check_devices(self.spec.id, devices, profile, profile_name)
            self.verify_device(handle, profile, profile_name, devices, launch.model.file_size)
            update = {
                "identity": reported,
                "accelerator": accelerator,
                "gpu": devices,
                "boot_seconds": round(boot_seconds, 3),
                "audit": self.audit_sandbox(),
                "kernels": self.kernels(handle, profile),
            }
            handle = handle.model_copy(update=update)
            loaded = self.prepare_model(handle, launch)
            settings = self.effective_settings(handle)
            if loaded:
                settings = {**settings, "load": loaded}
            return handle.model_copy(update={"settings": settings, "sandbox": read_back(self.container(handle))})
        except BaseException:
            self.stop(handle)
            raise

    def audit_sandbox(self) -> SandboxAudit:
        """What a process with this engine's exact settings could do (repro.containers.audit.audit_engine)."""
        from repro.containers.audit import audit_engine

        return audit_engine(
            self.client,
            self.boot_kwargs,
            self.probe_image_id,
            run_id=self.run_id,
            read_only=[str(Path(MODEL_MOUNT).parent)],
        )

    def stop(self, handle: EngineHandle | None) -> None:
        if handle is None:
            return
        stop_engine(self.client, handle)


def stop_engine(client: DockerClient, handle: EngineHandle | None) -> None:
    """Stop and remove the engine container of a handle; never raises."""
    if handle is None:
        return
    try:
        container = client.containers.get(handle.container_id)
    except Exception:
        return
    containers.remove(container)
