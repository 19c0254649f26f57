"""The real llama.cpp engine image with the real SmolLM2 GGUF, sealed (network none), on the cpu profile."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from harness.contracts import GateProbeResult
from repro.containers.cleanup import leaked_containers
from repro.containers.sandbox import EngineDied, hardening_problems
from repro.engines.base import stop_engine
from repro.engines.boot import BootSpec
from repro.engines.errors import EngineRefused
from repro.engines.gate import run_gate
from repro.engines.llamacpp import LlamaCppEngine
from repro.engines.registry import boot_engine
from repro.spec.matrix import LatencyGateSettings
from repro.spec.profiles import load_profiles
from tests.engines.test_specs import SMOKE

pytestmark = [pytest.mark.docker, pytest.mark.engine]

PROFILE = load_profiles().get("cpu")
SPEC = SMOKE.engines[0]
GROUP = "engine-tests"


def boot(
    docker_client, llama_image_ref, harness_image_ref, run_id: str, model, gguf: Path, *, spec=SPEC, profile=PROFILE
):
    return boot_engine(
        docker_client,
        BootSpec(
            spec=spec,
            image=llama_image_ref,
            probe_image=harness_image_ref,
            model=model,
            gguf=gguf,
            profile=profile,
            profile_name="cpu",
            decoding=SMOKE.decoding,
            run_id=run_id,
            group_id=GROUP,
        ),
    )


@pytest.fixture(scope="module")
def handle(docker_client, llama_image_ref, harness_image_ref, TEST_RUN_ID, smollm2_spec, smollm2_gguf):
    booted = boot(docker_client, llama_image_ref, harness_image_ref, TEST_RUN_ID, smollm2_spec, smollm2_gguf)
    try:
        yield booted
    finally:
        stop_engine(docker_client, booted)


def test_boots_sealed_and_reports_the_pinned_build(handle, docker_client, smollm2_spec):
    assert handle.identity == SPEC.expected_identity() == "b11434-src-b0a2feb6"
    assert handle.base_url == "http://127.0.0.1:8080" and handle.api == "openai"
    assert handle.model_name == smollm2_spec.id and handle.model_sha256 == smollm2_spec.sha256
    assert handle.accelerator is None and handle.boot_seconds is not None
    assert hardening_problems(handle.sandbox, "engine") == []
    assert handle.sandbox.network_mode == "none" and handle.sandbox.user == "10001:10001"
    assert [(m.target, m.read_only) for m in handle.sandbox.mounts] == [("/models/model.gguf", True)]
    container = docker_client.containers.get(handle.container_id)
    assert container.status == "running"
    assert not (container.attrs["NetworkSettings"].get("Ports") or {})
    assert set(container.attrs["NetworkSettings"].get("Networks") or {}) <= {"none"}


def test_effective_settings_come_from_props(handle):
    settings = handle.settings
    assert settings["build_info"] == handle.identity
    assert settings["n_ctx"] == SMOKE.decoding.context
    assert settings["total_slots"] == 1
    assert len(settings["chat_template_sha256"]) == 64
    assert settings["default_generation_settings"]


def test_the_latency_gate_passes(handle, docker_client):
    gate = run_gate(docker_client, handle, profile=PROFILE, settings=LatencyGateSettings(), decoding=SMOKE.decoding)
    assert gate.passed, gate.reason
    assert len(gate.attempts) == 3 and gate.warmup is not None and gate.passed_attempts >= 2
    assert all(a.valid_step and a.tool == "finish" for a in gate.attempts)
    assert gate.median_tokens_per_second >= PROFILE.gate.min_tokens_per_second
    assert gate.median_seconds <= PROFILE.gate.max_seconds_per_step


def test_a_gate_with_impossible_thresholds_excludes_with_the_reason(handle, docker_client):
    strict = PROFILE.model_copy(update={"gate": PROFILE.gate.model_copy(update={"min_tokens_per_second": 1e6})})
    gate = run_gate(
        docker_client,
        handle,
        profile=strict,
        settings=LatencyGateSettings(warmup=False, attempts=2, required=2),
        decoding=SMOKE.decoding,
    )
    assert not gate.passed and "tokens/s < 1e+06" in gate.reason and len(gate.attempts) == 2


def labelled(docker_client, run_id: str) -> set[str]:
    return {c.id for c in docker_client.containers.list(all=True, filters={"label": f"repro.run={run_id}"})}


def test_a_wrong_build_pin_is_refused_after_boot(
    docker_client, llama_image_ref, harness_image_ref, TEST_RUN_ID, smollm2_spec, smollm2_gguf
):
    before = labelled(docker_client, TEST_RUN_ID)
    wrong = SPEC.model_copy(update={"build_info": "b11434-not-this-build"})
    with pytest.raises(EngineRefused) as caught:
        boot(docker_client, llama_image_ref, harness_image_ref, TEST_RUN_ID, smollm2_spec, smollm2_gguf, spec=wrong)
    message = str(caught.value)
    assert "'b11434-src-b0a2feb6'" in message and "'b11434-not-this-build'" in message and "refused" in message
    assert labelled(docker_client, TEST_RUN_ID) == before  # the refused engine is stopped and removed


def test_an_engine_that_cannot_load_fails_fast_with_its_log(
    docker_client, llama_image_ref, harness_image_ref, TEST_RUN_ID, smollm2_spec, tmp_path: Path
):
    garbage = tmp_path / "not-a-model.gguf"
    garbage.write_bytes(b"this is not a GGUF file" * 1000)
    garbage.chmod(0o644)
    before = labelled(docker_client, TEST_RUN_ID)
    started = time.monotonic()
    with pytest.raises(EngineDied) as caught:
        boot(docker_client, llama_image_ref, harness_image_ref, TEST_RUN_ID, smollm2_spec, garbage)
    assert time.monotonic() - started < 60  # not the 300 s ready timeout
    assert caught.value.log_tail  # the engine's own words
    assert labelled(docker_client, TEST_RUN_ID) == before


def test_an_engine_killed_mid_request_is_an_engine_fault(
    docker_client, llama_image_ref, harness_image_ref, TEST_RUN_ID, smollm2_spec, smollm2_gguf
):
    handle = boot(docker_client, llama_image_ref, harness_image_ref, TEST_RUN_ID, smollm2_spec, smollm2_gguf)
    container = docker_client.containers.get(handle.container_id)

    def kill_soon() -> None:
        time.sleep(4)
        container.kill()

    killer = threading.Thread(target=kill_soon)
    try:
        killer.start()
        settings = LatencyGateSettings(warmup=True, attempts=20, required=20)
        with pytest.raises(EngineDied) as caught:
            run_gate(docker_client, handle, profile=PROFILE, settings=settings, decoding=SMOKE.decoding)
        assert "stopped (exit status 137)" in str(caught.value)
        seen = caught.value.probe_result  # the harness client's view, when the probe finished first
        if seen is not None:
            assert isinstance(seen, GateProbeResult)
            faults = [a for a in seen.attempts if a.engine_fault]
            assert faults and all((a.error or "").startswith("engine fault: ") for a in faults)
    finally:
        killer.join()
        stop_engine(docker_client, handle)


def test_no_engine_container_is_left(handle, docker_client, TEST_RUN_ID):
    """Everything but the module's own engine is gone (that one goes at module teardown)."""
    left = leaked_containers(TEST_RUN_ID, docker_client)
    assert left == [handle.container_name]


def test_llama_server_accepts_every_flag_we_pass(docker_client, llama_image_ref, TEST_RUN_ID):
    """`llama-server --help` in the built image lists each flag of the command line."""
    from repro.containers import lifecycle as containers
    from repro.containers.sandbox import create_kwargs, engine_settings, image_id
    from repro.engines.llamacpp import server_args

    image = image_id(docker_client, llama_image_ref)
    settings = engine_settings(run_id=TEST_RUN_ID, cell_id=GROUP, mem_limit=512 * 1024**2, nano_cpus=1_000_000_000)
    container = docker_client.containers.create(**create_kwargs(settings, image, ["--help"]))
    try:
        container.start()
        code = containers.wait(container, 60).code
        text = container.logs().decode(errors="replace")
    finally:
        containers.remove(container)
    assert code == 0
    flags = [arg for arg in server_args(SMOKE.models[0], PROFILE, SMOKE.decoding) if arg.startswith("-")]
    missing = [f for f in flags if f not in text.replace(",", " ").split()]
    assert missing == [], missing


def test_engine_class_is_llamacpp():
    assert LlamaCppEngine.kind == SPEC.kind
