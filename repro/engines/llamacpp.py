"""llama.cpp `llama-server`: every flag explicit, sealed, identity from `/props` build_info."""

from __future__ import annotations

from typing import Any

from harness.contracts import PropsResult
from repro.containers.client import Container
from repro.containers.sandbox import GIB, EngineDied, SandboxSettings, bind, create_kwargs, engine_settings
from repro.core.errors import BadInput
from repro.engines.base import MODEL_MOUNT, Engine, EngineHandle
from repro.engines.boot import BootSpec
from repro.engines.devices import gpu_device_requests, nano_cpus_for, threads_for
from repro.engines.errors import EngineRefused
from repro.engines.gpu import engine_log_problems, identity_agrees, parse_cuda_log
from repro.spec.findings import GpuDevice
from repro.spec.matrix import Decoding, ModelSpec
from repro.spec.profiles import Profile
from repro.store.chat_template import served_sha256

PORT = 8080
TEMPLATE_MOUNT = "/models/chat_template.jinja"
PROPS_TIMEOUT_S = 60
BOOT_LOG_BYTES = 4 * 1024**2  # what the boot reads of the engine's log for the CUDA evidence
GPU_LOG_VERBOSITY = "4"  # llama.cpp logs ggml_cuda_init and load_tensors at trace level (4), not at its default 3
SERVER_BINARY = "/usr/local/bin/llama-server"  # images/llama-cpp/Dockerfile*
KERNELS_LOG_BYTES = 256 * 1024  # what is read of a log or an exec's output for the system_info line
KERNELS_MAX_CHARS = 2000
NO_MODEL = "/nonexistent/kernels.gguf"  # the exec that prints system_info stops here, loading nothing

# The server options whose default llama.cpp b11434 chooses per device (or from free device
# memory), each pinned on a CUDA profile's command line (`device_args`); the test over the built
# server's --help (tests/engines/test_server_help.py) fails when its help lists another.
DEVICE_CHOSEN = {
    "--flash-attn": "default auto: enabled where the device supports it",
    "--fit": "default on: changes unset arguments to fit free device memory",
    "--gpu-layers": "default auto: as many layers as fit",
    "--split-mode": "how layers and KV are spread over the devices",
    "--main-gpu": "which device holds the model with split mode none",
    "--batch-size": "logical batch: with --fit, sized to memory",
    "--load-mode": "default auto: mmap, unless a device does not support it",
    "--ubatch-size": "physical batch: the kernels' shapes, and so the floating-point sums",
}


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
        *cache_args(profile),
        *device_args(profile),
        *(["--chat-template-file", TEMPLATE_MOUNT] if model.chat_template else []),
    ]


def cache_args(profile: Profile) -> list[str]:
    """The server's own prompt cache, as the profile says: off is `--no-cache-prompt` (the default
    of every request) and `--cache-ram 0` (no prompt states kept in host memory), which the
    llama.cpp maintainers advise for determinism; the harness also sends `cache_prompt: false`.
    Per scenario the flags are the same: a harness that marks a scenario's start sends
    `cache_prompt: false` on its first request and `true` on the later ones (each request's own
    switch overrides the default), one that cannot sends none and so runs with the cache off, and
    no state is kept in host memory that a later scenario could restore. Across the run (the
    exploration mode) the default is on."""
    return ["--cache-prompt"] if profile.cache_prompt is True else ["--no-cache-prompt", "--cache-ram", "0"]


def device_args(profile: Profile) -> list[str]:
    """Every setting a CUDA build would choose per device, pinned (DEVICE_CHOSEN; -ngl, -b and
    -ub are in the common arguments): flash attention as the profile says, no fitting to free
    memory, one device or an even split, and the log level that prints the CUDA evidence."""
    if profile.engine_variant != "cuda":
        return []
    missing = profile.missing_gpu_pins()
    if missing or profile.flash_attn is None:
        raise BadInput(f"a cuda profile must set {', '.join(missing or ['flash_attn'])} (matrix/profiles.yaml)")
    if profile.gpu_count <= 1:
        split = ["--split-mode", "none", "--main-gpu", "0"]
    else:
        split = ["--split-mode", "layer", "--tensor-split", ",".join(["1"] * profile.gpu_count), "--main-gpu", "0"]
    return ["--flash-attn", profile.flash_attn, "--fit", "off", *split, "--load-mode", "mmap", "-lv", GPU_LOG_VERBOSITY]


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

    def sandbox_settings(self, profile: Profile, host_cpus: int | None) -> SandboxSettings:
        """The engine container's sandbox: the run's labels, the profile's memory and CPUs."""
        return engine_settings(
            run_id=self.run_id,
            cell_id=self.group_id,
            mem_limit=int(profile.memory_gb * GIB),
            nano_cpus=nano_cpus_for(profile, host_cpus),
        )

    def container_kwargs(
        self, launch: BootSpec, *, host_cpus: int | None = None, name: str | None = None
    ) -> dict[str, Any]:
        model, profile = launch.model, launch.profile
        return create_kwargs(
            self.sandbox_settings(profile, host_cpus),
            launch.image,
            server_args(model, profile, launch.decoding, port=self.port),
            name=name,
            mounts=[bind(launch.gguf, MODEL_MOUNT, read_only=True), *template_mounts(model)],
            working_dir="/tmp",
            device_requests=gpu_device_requests(profile, self.replica),
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

    def verify_device(
        self,
        handle: EngineHandle,
        profile: Profile,
        profile_name: str,
        devices: list[GpuDevice],
        model_bytes: int | None = None,
    ) -> None:
        """On a GPU profile, the server's own log must show CUDA finding the profile's device,
        every layer offloaded and the model's weights in device memory; a server that fell back
        to the CPU (CUDA failed to initialise, -ngl ignored) is refused here, so its cells fail
        instead of running on the CPU."""
        if not profile.gpu:
            return
        log = parse_cuda_log(log_head(self.container(handle)))
        problems = engine_log_problems(self.spec.facts, log, profile, profile_name, model_bytes) + identity_agrees(
            devices, log
        )
        if problems:
            raise EngineRefused(f"engine {self.spec.id}: {problems[0]}; refused")

    def effective_settings(self, handle: EngineHandle) -> dict[str, Any]:
        return summarize_props(self.props(handle))

    def kernels(self, handle: EngineHandle, profile: Profile) -> str | None:
        """llama.cpp's system_info features ("CPU : SSE3 = 1 | AVX2 = 1 | ..."), which the server
        prints at trace level: from the engine's own log where it logs at that level (GPU
        profiles), else from the same binary run once by exec in the engine's container, with the
        engine's threads and a model path that does not exist, so it prints them and stops."""
        container = self.container(handle)
        found = system_info_features(log_head(container, KERNELS_LOG_BYTES))
        if found is not None:
            return found
        threads = str(threads_for(profile))
        argv = [SERVER_BINARY, "-lv", "4", "-t", threads, "-tb", threads, "--port", str(self.port), "-m", NO_MODEL]
        try:
            _, output = container.exec_run(argv, user="", demux=False)
        except Exception:  # the record then says "not reported"; nothing is judged on its absence
            return None
        return system_info_features((output or b"")[:KERNELS_LOG_BYTES].decode("utf-8", errors="replace"))


def system_info_features(text: str) -> str | None:
    """The features of llama.cpp's `system_info: n_threads = 2 (n_threads_batch = 2) / 2 | CPU :
    SSE3 = 1 | ... |` line (what follows the thread counts), or None where the text has none."""
    for line in text.splitlines():
        _, found, rest = line.partition("system_info:")
        if found:
            parts = [part.strip() for part in rest.split("|")[1:] if part.strip()]
            return " | ".join(parts)[:KERNELS_MAX_CHARS] or None
    return None


def log_head(container: Container, limit: int = BOOT_LOG_BYTES) -> str:
    """The start of a container's log, read as a stream and cut at `limit` bytes (at boot it is
    the model load's: the CUDA lines come first)."""
    chunks, size = [], 0
    for chunk in container.logs(stdout=True, stderr=True, stream=True, follow=False):
        chunks.append(chunk)
        size += len(chunk)
        if size >= limit:
            break
    return b"".join(chunks)[:limit].decode("utf-8", errors="replace")


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
