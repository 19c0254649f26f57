"""llama.cpp `llama-server`: every flag explicit, sealed, identity from `/props` build_info."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.contracts import PropsResult
from repro.containers.sandbox import GIB, EngineDied, bind, create_kwargs, engine_settings
from repro.engines.base import MODEL_MOUNT, Engine, EngineHandle, gpu_device_requests, nano_cpus_for, threads_for
from repro.spec.matrix import Decoding, ModelSpec
from repro.spec.profiles import Profile
from repro.store.chat_template import served_sha256

PORT = 8080
TEMPLATE_MOUNT = "/models/chat_template.jinja"
PROPS_TIMEOUT_S = 60


def server_args(model: ModelSpec, profile: Profile, decoding: Decoding, *, port: int = PORT) -> list[str]:
    """The llama-server command line: nothing left to a default that could drift between builds."""
    threads = str(threads_for(profile))
    return [
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "-m",
        MODEL_MOUNT,
        "-a",
        model.id,
        "-c",
        str(decoding.context * profile.slots),  # each slot gets the matrix's context
        "-ngl",
        str(profile.gpu_layers),
        "-np",
        str(profile.slots),
        "-b",
        "2048",
        "-ub",
        "512",
        "--seed",
        str(decoding.seed),
        "-t",
        threads,
        "-tb",
        threads,
        "--jinja",
        "--no-webui",
        *(["--chat-template-file", TEMPLATE_MOUNT] if model.chat_template else []),
    ]


def template_mounts(model: ModelSpec) -> list:
    """The pinned chat template file, mounted read-only where --chat-template-file names it."""
    if model.chat_template is None:
        return []
    from repro.core.config import PROJECT_ROOT

    return [bind(PROJECT_ROOT / model.chat_template.path, TEMPLATE_MOUNT, read_only=True)]


class LlamaCppEngine(Engine):
    kind = "llama.cpp"
    port = PORT
    api = "openai"
    health_path = "/health"

    def model_name(self, model: ModelSpec) -> str:
        return model.id  # served under this alias (-a)

    def container_kwargs(
        self, image: str, model: ModelSpec, gguf: Path, profile: Profile, decoding: Decoding, *, host_cpus: int | None = None, name: str | None = None
    ) -> dict[str, Any]:
        settings = engine_settings(
            run_id=self.run_id,
            cell_id=self.group_id,
            mem_limit=int(profile.memory_gb * GIB),
            nano_cpus=nano_cpus_for(profile, host_cpus),
        )
        return create_kwargs(
            settings,
            image,
            server_args(model, profile, decoding, port=self.port),
            name=name,
            mounts=[bind(gguf, MODEL_MOUNT, read_only=True), *template_mounts(model)],
            working_dir="/tmp",
            device_requests=gpu_device_requests(profile),
        )

    def props(self, handle: EngineHandle, *, fresh: bool = False) -> dict[str, Any]:
        """GET /props through a probe (cached per container: identity and settings share one)."""
        cached = getattr(self, "_props", None)
        if cached and cached[0] == handle.container_id and not fresh:
            return cached[1]
        result = self.probe(handle, ["props", "--base-url", self.base_url], PropsResult, timeout=PROPS_TIMEOUT_S)
        if not result.ok or result.props is None:
            raise EngineDied(f"engine {self.spec.id}: /props failed: {result.error}")
        self._props = (handle.container_id, result.props)
        return result.props

    def identity(self, handle: EngineHandle) -> str:
        return str(self.props(handle).get("build_info") or "")

    def effective_settings(self, handle: EngineHandle) -> dict[str, Any]:
        return summarize_props(self.props(handle))


def summarize_props(props: dict[str, Any]) -> dict[str, Any]:
    """What the server really runs with, from /props (the chat template is recorded by hash)."""
    generation = props.get("default_generation_settings") or {}
    out: dict[str, Any] = {
        "build_info": props.get("build_info"),
        "default_generation_settings": generation,
        "n_ctx": generation.get("n_ctx", props.get("n_ctx")),
        "total_slots": props.get("total_slots"),
        "model_alias": props.get("model_alias"),
        "modalities": props.get("modalities"),
        "chat_template_caps": props.get("chat_template_caps"),
    }
    template = props.get("chat_template")
    if isinstance(template, str):
        out["chat_template_sha256"] = served_sha256(template)
    path = props.get("model_path")
    if isinstance(path, str):
        out["model_path"] = path
    return {key: value for key, value in out.items() if value is not None}
