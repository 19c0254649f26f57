"""A real llama-server that computes on the CPU while nvidia-smi names a Tesla T4 is refused at
boot on gpu-t4, never run: the whole boot path (identity, nvidia-smi by exec, the device check,
the CUDA evidence in the server's own log) with the built CPU image, the SmolLM2 GGUF and a fake
nvidia-smi, since no GPU is here. (The same with the CUDA image and the toolkit's stub
libcuda.so.1 is tests/compose/test_cuda_image.py, marker cuda_build.)"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from repro.containers.cleanup import leaked_containers
from repro.containers.sandbox import bind
from repro.engines.errors import EngineRefused
from repro.engines.llamacpp import LlamaCppEngine
from repro.spec.profiles import load_profiles
from tests.engines.test_specs import SMOKE

pytestmark = [pytest.mark.docker, pytest.mark.engine]

T4_ROW = "Tesla T4, 7.5, 535.183.01, 15360, [N/A]"


class NoGpuEngine(LlamaCppEngine):
    """The engine with no device request (no NVIDIA runtime here) and extra read-only mounts."""

    mounts: list = []

    def container_kwargs(self, launch, *, host_cpus=None, name=None):
        kwargs = super().container_kwargs(launch, host_cpus=host_cpus, name=name)
        kwargs.pop("device_requests", None)
        kwargs["mounts"] = [*kwargs["mounts"], *self.mounts]
        return kwargs


def fake_nvidia_smi() -> Path:
    """An nvidia-smi that names a Tesla T4, readable by the engine's user."""
    folder = Path(tempfile.mkdtemp(prefix="repro-fake-smi-"))
    folder.chmod(0o755)
    script = folder / "nvidia-smi"
    script.write_text(f"#!/bin/sh\necho '{T4_ROW}'\n")
    script.chmod(0o755)
    return script


def test_a_cpu_server_named_t4_by_nvidia_smi_is_refused(
    docker_client, llama_image_ref, harness_image_ref, smollm2_spec, smollm2_gguf, TEST_RUN_ID
):
    engine = NoGpuEngine(
        docker_client, SMOKE.engines[0], probe_image=harness_image_ref, run_id=TEST_RUN_ID, group_id="gpu-fallback"
    )
    engine.mounts = [bind(fake_nvidia_smi(), "/usr/local/bin/nvidia-smi", read_only=True)]
    with pytest.raises(EngineRefused) as caught:
        profile = load_profiles().get("gpu-t4")
        engine.start(
            engine.boot_spec(
                llama_image_ref, smollm2_spec, smollm2_gguf, profile, SMOKE.decoding, profile_name="gpu-t4"
            )
        )
    assert str(caught.value) == (
        "engine llamacpp-b11434: the engine log shows no CUDA device (ggml_cuda_init): "
        "it served on the CPU, not on a Tesla T4; refused"
    )
    assert leaked_containers(TEST_RUN_ID, docker_client) == []  # the refused engine was stopped and removed
