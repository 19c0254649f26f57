"""Sandbox lifecycle with a real Docker engine: read-back, wait, remove, probes, cleanup by label."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from harness.contracts import EXIT_ENGINE_UNREACHABLE, OllamaLoadResult, ReadyResult
from repro.containers import cleanup as cleanup_module
from repro.containers import lifecycle as containers
from repro.containers.sandbox import (
    EngineDied,
    ProbeFailed,
    container_name,
    create_kwargs,
    engine_settings,
    hardening_problems,
    image_id,
    probe_kwargs,
    read_back,
    run_probe,
)

pytestmark = pytest.mark.docker


def sleeper(client, image: str, run_id: str, *, role: str = "engine", seconds: int = 600, exit_code: int | None = None):
    """A sealed stand-in 'engine' from the harness image: sleeps (or exits with a code)."""
    code = f"import sys, time; print('stand-in up', flush=True); time.sleep({seconds}); sys.exit({exit_code or 0})"
    if exit_code is not None and seconds == 0:
        code = f"import sys; print('stand-in exiting', flush=True); sys.exit({exit_code})"
    settings = engine_settings(run_id=run_id, cell_id="sandbox-tests", mem_limit=256 * 1024**2, nano_cpus=500_000_000)
    settings = settings.with_(labels={**settings.labels, "repro.role": role})
    kwargs = create_kwargs(
        settings, image, ["-c", code], entrypoint=["python3"], name=container_name(run_id, "engine", "sleeper")
    )
    return client.containers.create(**kwargs)


def test_read_back_reports_what_docker_applied(docker_client, harness_image_ref, TEST_RUN_ID, tmp_path: Path):
    image = image_id(docker_client, harness_image_ref)
    engine = sleeper(docker_client, image, TEST_RUN_ID)
    probe = None
    try:
        engine.start()
        kwargs = probe_kwargs(
            image,
            engine.id,
            ["ready", "--base-url", "http://127.0.0.1:8080", "--timeout", "1"],
            tmp_path,
            run_id=TEST_RUN_ID,
            cell_id="c",
        )
        probe = docker_client.containers.create(**kwargs)
        applied = read_back(probe)
        assert hardening_problems(applied, "probe") == []
        assert applied.user == "10001:10001" and applied.read_only and applied.cap_drop == ["ALL"]
        assert applied.security_opt == ["no-new-privileges"] and applied.network_mode == f"container:{engine.id}"
        assert applied.pids_limit == 64 and applied.mem_limit == 512 * 1024**2 and applied.nano_cpus == 1_000_000_000
        assert applied.env["TZ"] == "UTC" and applied.env["PYTHONHASHSEED"] == "0"
        assert [(m.target, m.read_only) for m in applied.mounts] == [("/out", False)]
        assert str(tmp_path) not in applied.model_dump_json()  # host paths are never recorded
        engine_applied = read_back(engine)
        assert hardening_problems(engine_applied, "engine") == []
        assert engine_applied.network_mode == "none"
        assert not (engine.attrs["NetworkSettings"].get("Ports") or {})  # nothing published
    finally:
        containers.remove(probe)
        containers.remove(engine)


def probe(client, image: str, engine, argv: list[str], result_type: type, run_id: str, timeout: float):
    return run_probe(client, image, engine, argv, result_type, run_id=run_id, cell_id="c", timeout=timeout)


def test_probe_runs_in_the_namespace_and_result_comes_from_the_file(docker_client, harness_image_ref, TEST_RUN_ID):
    """Nothing listens in a sleeper's namespace: the ready probe reports unreachable (exit 3)."""
    from repro.containers.sandbox import ProbeUnreachable

    image = image_id(docker_client, harness_image_ref)
    engine = sleeper(docker_client, image, TEST_RUN_ID)
    try:
        engine.start()
        with pytest.raises(ProbeUnreachable) as caught:
            probe(
                docker_client,
                image,
                engine,
                ["ready", "--base-url", "http://127.0.0.1:8080", "--timeout", "1"],
                ReadyResult,
                TEST_RUN_ID,
                60,
            )
        assert isinstance(caught.value.result, ReadyResult) and caught.value.result.ready is False
        assert caught.value.probe_exit_code == EXIT_ENGINE_UNREACHABLE
        load = [
            "ollama-load",
            "--base-url",
            "http://127.0.0.1:1",
            "--gguf",
            "/nonexistent",
            "--sha256",
            "0" * 64,
            "--name",
            "x",
            "--template",
            "t",
        ]
        with pytest.raises(ProbeFailed, match="refused its input"):
            probe(docker_client, image, engine, load, OllamaLoadResult, TEST_RUN_ID, 60)
    finally:
        containers.remove(engine)
    assert cleanup_module.leaked_containers(TEST_RUN_ID, docker_client) == []


def test_probe_fails_fast_when_the_engine_exits(docker_client, harness_image_ref, TEST_RUN_ID):
    image = image_id(docker_client, harness_image_ref)
    engine = sleeper(docker_client, image, TEST_RUN_ID, seconds=3, exit_code=7)
    try:
        engine.start()
        with pytest.raises(EngineDied) as caught:
            probe(
                docker_client,
                image,
                engine,
                ["ready", "--base-url", "http://127.0.0.1:8080", "--timeout", "120"],
                ReadyResult,
                TEST_RUN_ID,
                180,
            )
        assert "stopped" in str(caught.value) or "not running" in str(caught.value)
        assert "stand-in up" in caught.value.log_tail and caught.value.container_exit_code == 7
    finally:
        containers.remove(engine)


def test_cleanup_removes_leftovers_by_label(docker_client, harness_image_ref, TEST_RUN_ID):
    run_id = f"{TEST_RUN_ID}-cleanup-{uuid.uuid4().hex[:6]}"
    image = image_id(docker_client, harness_image_ref)
    left = [sleeper(docker_client, image, run_id), sleeper(docker_client, image, run_id, role="probe")]
    left[0].start()
    other = sleeper(docker_client, image, TEST_RUN_ID)  # another run's container: untouched
    try:
        assert cleanup_module.leaked_containers(run_id, docker_client) == sorted(c.name for c in left)
        report = cleanup_module.cleanup(run_id, docker_client)
        assert sorted(r.name for r in report) == sorted(c.name for c in left)
        assert all(r.removed and r.run == run_id for r in report)
        assert {r.role for r in report} == {"engine", "probe"}
        assert cleanup_module.leaked_containers(run_id, docker_client) == []
        other.reload()  # still there
    finally:
        containers.remove(other)
        for container in left:
            containers.remove(container)


def test_cleanup_command(docker_client, harness_image_ref, TEST_RUN_ID):
    from repro.__main__ import main

    run_id = f"{TEST_RUN_ID}-cli-{uuid.uuid4().hex[:6]}"
    container = sleeper(docker_client, harness_image_ref.id, run_id)
    try:
        assert main(["cleanup", "--run-id", run_id]) == 0
        assert cleanup_module.leaked_containers(run_id, docker_client) == []
        assert main(["cleanup", "--run-id", run_id]) == 0
    finally:
        containers.remove(container)
