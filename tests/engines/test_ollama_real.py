"""A real Ollama, built here from its pinned Go module (images/ollama/Dockerfile, matrix/ollama-smoke.yaml):
the image's build info names the module, its version and h1: hash and the CPU flags; it boots
sealed (network none) through repro's engine path, answers /api/version with the pin, takes the
verified GGUF as a blob with the explicit template and the profile's threads, passes the latency
gate, and answers a request from inside its own namespace.

The image build fetches the module, its build list and Go 1.24.0 on the host (`go mod download`)
and compiles with no network: about 4 minutes on 2 cores the first time, cached by its content key
after that (marker `ollama`, in the default run)."""

from __future__ import annotations

import pytest

from repro.containers.sandbox import hardening_problems
from repro.engines.errors import EngineRefused
from repro.engines.gate import run_gate
from repro.engines.ollama import OllamaEngine
from repro.spec.profiles import load_profiles
from tests.engines.conftest import OLLAMA_MATRIX, OLLAMA_SPEC

pytestmark = [pytest.mark.docker, pytest.mark.ollama]

MATRIX, SPEC = OLLAMA_MATRIX, OLLAMA_SPEC
PROFILE = load_profiles().get("cpu")


def start(docker_client, image, harness_image_ref, run_id, model, gguf, spec=SPEC):
    engine = OllamaEngine(docker_client, spec, probe_image=harness_image_ref, run_id=run_id, group_id="ollama-real")
    return engine, engine.start(engine.boot_spec(image.id, model, gguf, PROFILE, MATRIX.decoding, profile_name="cpu"))


def test_the_image_names_its_module_toolchain_and_flags(docker_client, ollama_image):
    go = SPEC.build.source.go
    labels = docker_client.images.get(ollama_image.id).labels
    assert labels["repro.go_module"] == f"{go.module}@{go.version}" and labels["repro.go_sum"] == go.sum
    assert labels["repro.go_toolchain"] == "go1.24.0" and labels["repro.cpu_flags"] == SPEC.build.cpu_flags
    shown = docker_client.containers.run(
        ollama_image.id, entrypoint=["cat", "/usr/local/share/ollama.buildinfo"], network_mode="none", remove=True
    ).decode()
    assert f"mod\t{go.module}\t{go.version}\t{go.sum}" in shown  # the build info, not a (devel) build
    assert "go1.24.0" in shown.splitlines()[0] and f"CPU_FLAGS={SPEC.build.cpu_flags}" in shown


def test_a_real_ollama_boots_sealed_and_answers(
    docker_client, ollama_image, harness_image_ref, TEST_RUN_ID, smollm2_spec, smollm2_gguf
):
    engine, handle = start(docker_client, ollama_image, harness_image_ref, TEST_RUN_ID, smollm2_spec, smollm2_gguf)
    try:
        assert handle.identity == "0.11.4" and handle.api == "ollama"
        assert handle.sandbox.network_mode == "none" and hardening_problems(handle.sandbox, "engine") == []
        load = handle.settings["load"]
        assert load["blob"] == f"sha256:{smollm2_spec.sha256}" and load["model"] == handle.model_name
        show = handle.settings["show"]
        assert "<|im_start|>" in show["template"] and "num_thread" in show["parameters"]
        gate = run_gate(docker_client, handle, profile=PROFILE, settings=MATRIX.latency_gate, decoding=MATRIX.decoding)
        assert gate.passed, gate.reason
        ask = ["ollama", "run", handle.model_name, "Name three colours."]
        reply = engine.container(handle).exec_run(ask, environment={"OLLAMA_HOST": "127.0.0.1:11434"})
        assert reply.exit_code == 0 and reply.output.strip(), reply.output[-500:]
    finally:
        engine.stop(handle)


def test_a_version_that_is_not_the_pin_is_refused(
    docker_client, ollama_image, harness_image_ref, TEST_RUN_ID, smollm2_spec, smollm2_gguf
):
    pinned = SPEC.model_copy(update={"version": "0.11.5"})
    with pytest.raises(EngineRefused, match="reports version '0.11.4', the matrix pins '0.11.5'"):
        start(docker_client, ollama_image, harness_image_ref, TEST_RUN_ID, smollm2_spec, smollm2_gguf, spec=pinned)
