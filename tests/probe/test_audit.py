"""The sandbox audit in a real hardened container: the cell's exact harness settings, joined to a
sealed stand-in engine's namespace. Every escape must be tried and blocked."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from harness.contracts import AUDIT_ITEMS
from repro.containers import lifecycle as containers
from repro.containers.audit import audit_command, host_gateways, run_audit
from repro.containers.sandbox import (
    bind,
    container_name,
    create_kwargs,
    engine_settings,
    hardening_problems,
    harness_kwargs,
    image_id,
    read_back,
)

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[2]


def stand_in_engine_kwargs(image: str, run_id: str) -> dict:
    """A sealed 'engine' (network none) that only sleeps: the namespace the audit joins."""
    settings = engine_settings(run_id=run_id, cell_id="audit-tests", mem_limit=256 * 1024**2, nano_cpus=500_000_000)
    command = ["-c", "import time; time.sleep(600)"]
    return create_kwargs(
        settings, image, command, entrypoint=["python3"], name=container_name(run_id, "engine", "audit")
    )


@pytest.fixture()
def out_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "out"
    folder.mkdir()
    os.chmod(folder, 0o777)  # the audit runs as uid 10001
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_every_escape_is_tried_and_blocked(docker_client, harness_image_ref, TEST_RUN_ID, out_dir: Path):
    image = image_id(docker_client, harness_image_ref)
    with containers.started(docker_client, stand_in_engine_kwargs(image, TEST_RUN_ID)) as engine:
        scenarios = bind(ROOT / "scenarios", "/scenarios", read_only=True)
        kwargs = harness_kwargs(
            image,
            engine.id,
            audit_command(["/scenarios"], host_gateways()),
            out_dir,
            run_id=TEST_RUN_ID,
            cell_id="audit",
            mounts=[scenarios],
        )
        created = docker_client.containers.create(**kwargs)  # its settings, read back before it runs
        try:
            assert hardening_problems(read_back(created), "harness") == []
        finally:
            containers.remove(created)
        audit = run_audit(docker_client, kwargs, out_dir)
    assert audit.error is None
    assert audit.uid == 10001
    assert [item.name for item in audit.items] and {item.name for item in audit.items} == set(AUDIT_ITEMS)
    assert audit.escapes() == [], [f"{item.name}: {item.detail}" for item in audit.escapes()]
    details = {item.name: item.detail for item in audit.items}
    assert "fork failed" in details["pids_limit"]
    assert "killed by signal 9" in details["memory_limit"] or "MemoryError" in details["memory_limit"]
    assert details["capabilities"] == "CapEff 0000000000000000"


def test_the_engine_audit_runs_with_the_engines_own_settings(
    docker_client, harness_image_ref, TEST_RUN_ID, tmp_path: Path
):
    """llama.cpp's real container settings (sealed, its model mounted read-only), with the audit as
    the process: every escape tried and blocked, the memory limit read rather than exceeded."""
    from repro.containers.audit import audit_engine
    from repro.engines.llamacpp import LlamaCppEngine
    from repro.spec.matrix import Decoding, EngineSpec, ModelSpec
    from repro.spec.profiles import load_profiles

    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    model = ModelSpec.model_validate(
        {
            "id": "m",
            "family": "f",
            "parameters": "1B",
            "quant": "Q4_0",
            "file_size": 4,
            "sha256": "0" * 64,
            "sources": [{"path": "m.gguf"}],
        }
    )
    spec = EngineSpec.model_validate(
        {
            "id": "llamacpp-test",
            "kind": "llama.cpp",
            "label": "b1",
            "image": "repro/none@sha256:" + "0" * 64,
            "build_info": "b1-x",
        }
    )
    image = image_id(docker_client, harness_image_ref)
    engine = LlamaCppEngine(docker_client, spec, probe_image=harness_image_ref, run_id=TEST_RUN_ID, group_id="audit")
    kwargs = engine.container_kwargs(
        engine.boot_spec(image, model, gguf, load_profiles().get("cpu"), Decoding(), profile_name="cpu")
    )
    audit = audit_engine(docker_client, kwargs, image, run_id=TEST_RUN_ID, read_only=["/models"])
    assert audit.error is None and audit.uid == 10001
    assert audit.escapes() == [], [f"{item.name}: {item.detail}" for item in audit.escapes()]
    details = {item.name: item.detail for item in audit.items}
    assert details["memory_limit"] == "a cgroup memory limit of 8192 MiB is in force (read, not exceeded)"
