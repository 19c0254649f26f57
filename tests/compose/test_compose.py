"""docker-compose.yml / docker-compose.gpu.yml: one cell by hand, sealed as a run seals it.

- the files hold no machine-specific value, and `repro compose env` fills them from the very
  create kwargs the orchestrator uses (checked against what `docker-compose config` resolves,
  for the files alone and combined);
- (engine) one cell's first three scenarios run through docker-compose and through
  `repro matrix run --only CELL` give identical transcripts.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from harness.contracts import ProgressEvent
from repro.containers.sandbox import LABEL_CELL, LABEL_ROLE, LABEL_RUN
from repro.core.config import DEFAULT_MATRIX, PROJECT_ROOT
from repro.plan.planner import make_plan
from repro.run.compose import (
    COMPOSE_FILE,
    COMPOSE_GPU_FILE,
    ComposeCell,
    compose_env,
    expected_services,
    prepare_out,
    write_env,
)
from repro.spec.loading import load_matrix
from repro.spec.profiles import load_profiles
from repro.suites.registry import select

MATRIX = Path(__file__).with_name("matrix.yaml")
FILES = [PROJECT_ROOT / COMPOSE_FILE, PROJECT_ROOT / COMPOSE_GPU_FILE]
COMPOSE = shutil.which("docker-compose")
needs_compose = pytest.mark.skipif(
    COMPOSE is None, reason="docker-compose is not installed (apt-get install docker-compose)"
)
FAKE_ID = "sha256:" + "e" * 64


def test_the_test_matrix_pins_the_smoke_model_and_engine():
    smoke, ours = load_matrix(DEFAULT_MATRIX).matrix, load_matrix(MATRIX).matrix
    assert ours.models[0] == smoke.model(ours.models[0].id)
    assert ours.engines[0] == smoke.engine(ours.engines[0].id)
    assert ours.decoding == smoke.decoding
    assert ours.suites[0].path == smoke.suites[0].path and len(select(ours.suites[0]).ids) == 3


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_the_compose_files_hold_no_machine_specific_value(path):
    text = path.read_text()
    for word in ("sha256:", "/home", "/root", "/work", "/var/lib", str(PROJECT_ROOT), "8080", "127.0.0.1"):
        assert word not in text, word
    data = yaml.safe_load(text)
    for name, service in data["services"].items():
        assert service["image"].startswith("${"), name


def test_the_compose_labels_are_the_sandbox_labels():
    services = yaml.safe_load(FILES[0].read_text())["services"]
    assert {name: set(service["labels"]) for name, service in services.items()} == {
        name: {LABEL_RUN, LABEL_CELL, LABEL_ROLE} for name in services
    }
    assert {name: service["labels"][LABEL_ROLE] for name, service in services.items()} == {
        "engine": "engine",
        "ready": "probe",
        "harness": "harness",
    }


# ---------------------------------------------------------------- docker-compose config


def fake_cell(profile_name: str, tmp_path: Path) -> ComposeCell:
    """The test matrix's cell on a profile with stand-in image ids and GGUF (config resolves no image)."""
    profiles = load_profiles()
    profile = profiles.get(profile_name)
    plan = make_plan(load_matrix(MATRIX, set(profiles.profiles)), profile_name, profile)
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    image = SimpleNamespace(id=FAKE_ID, reference="stand-in")
    return ComposeCell(
        cell=plan.cells[0],
        profile_name=profile_name,
        profile=profile,
        harness=image,
        engine_image=image,
        gguf=gguf,
        suite=select(plan.cells[0].suite),
    )


class NoDocker:
    """A client for compose_env when no engine is asked anything but the CPU count."""

    def info(self):
        return {"NCPU": os.cpu_count()}


def compose(*args: str, env_file: Path, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
    command = [COMPOSE, "--env-file", str(env_file), "--project-directory", str(PROJECT_ROOT), *args]
    proc = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=timeout)
    if check:
        assert proc.returncode == 0, f"{' '.join(command)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def resolved(env_file: Path, *files: Path) -> dict:
    args = [part for path in files for part in ("-f", str(path))]
    return yaml.safe_load(compose(*args, "config", env_file=env_file).stdout)["services"]


def assert_same_as_run(service: dict, kwargs: dict, *, network: str) -> None:
    """What docker-compose resolved for a service equals what a run creates (create kwargs)."""
    assert service["image"] == kwargs["image"]
    command = service["command"]
    assert (command.split() if isinstance(command, str) else command) == kwargs["command"]
    assert service.get("entrypoint") == kwargs.get("entrypoint")
    assert str(service["user"]) == kwargs["user"]
    assert service["read_only"] is kwargs["read_only"] is True
    assert service["cap_drop"] == kwargs["cap_drop"] == ["ALL"]
    assert service["security_opt"] == kwargs["security_opt"]
    assert service["privileged"] is kwargs["privileged"] is False
    assert service["init"] is kwargs["init"] is True
    assert service["working_dir"] == kwargs["working_dir"]
    assert int(service["pids_limit"]) == kwargs["pids_limit"]
    assert int(service["mem_limit"]) == int(service["memswap_limit"]) == kwargs["mem_limit"] == kwargs["memswap_limit"]
    assert int(float(service["cpus"]) * 1_000_000_000) == kwargs["nano_cpus"]
    assert service["tmpfs"] == [f"{path}:{options}" for path, options in kwargs["tmpfs"].items()]
    assert {k: str(v) for k, v in service["environment"].items()} == kwargs["environment"]
    assert service["labels"] == kwargs["labels"]
    assert service["network_mode"] == network
    volumes = sorted((v["source"], v["target"], bool(v.get("read_only"))) for v in service.get("volumes", []))
    mounts = sorted((m["Source"], m["Target"], bool(m["ReadOnly"])) for m in kwargs["mounts"])
    # the run mounts none: an empty folder
    if "/fixtures" in [v[1] for v in volumes] and "/fixtures" not in [m[1] for m in mounts]:
        empty = next(v for v in volumes if v[1] == "/fixtures")
        assert Path(empty[0]).is_dir() and not any(Path(empty[0]).iterdir()) and empty[2]
        volumes.remove(empty)
    assert volumes == mounts


@pytest.mark.docker
@needs_compose
@pytest.mark.parametrize("profile", ["cpu", "gpu-t4"])
def test_compose_config_resolves_to_what_a_run_creates(profile, tmp_path):
    source = fake_cell(profile, tmp_path)
    out = tmp_path / "out"
    prepare_out(out)
    client = NoDocker()
    values = compose_env(source, out_dir=out, run_id="compose-test", client=client)
    env_file = write_env(values, tmp_path / ".env")
    runs = expected_services(source, run_id="compose-test", out_dir=out, host_cpus=os.cpu_count(), client=client)
    alone = resolved(env_file, FILES[0])
    combined = resolved(env_file, *FILES)
    for services in (alone, combined):
        assert set(services) == {"engine", "ready", "harness"}
        assert_same_as_run(services["engine"], runs["engine"], network="none")
        assert_same_as_run(services["ready"], runs["ready"], network="service:engine")
        assert_same_as_run(services["harness"], runs["harness"], network="service:engine")
        assert services["harness"]["depends_on"]["ready"]["condition"] == "service_completed_successfully"
    assert "deploy" not in alone["engine"]
    devices = combined["engine"]["deploy"]["resources"]["reservations"]["devices"]
    requests = runs["engine"].get("device_requests") or []
    if profile == "cpu":
        assert values["COMPOSE_FILE"] == COMPOSE_FILE and requests == []
    else:
        assert values["COMPOSE_FILE"] == f"{COMPOSE_FILE}:{COMPOSE_GPU_FILE}"
        assert (
            [(d["count"], [d["capabilities"]]) for d in devices]
            == [(r["Count"], r["Capabilities"]) for r in requests]
            == [(1, [["gpu"]])]
        )
        assert "-ngl 999" in values["REPRO_ENGINE_COMMAND"]


@pytest.mark.docker
@needs_compose
def test_compose_refuses_to_start_without_an_env(tmp_path):
    empty = tmp_path / ".env"
    empty.write_text("")
    proc = compose("-f", str(FILES[0]), "config", env_file=empty, check=False)
    assert proc.returncode != 0 and "repro compose env" in proc.stderr


# ---------------------------------------------------------------- the same run either way


def repro(*args: str, env: dict, timeout: float = 1800) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "repro", *args],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, f"repro {' '.join(args)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def env_values(path: Path) -> dict[str, str]:
    lines = [line for line in path.read_text().splitlines() if line and not line.startswith("#")]
    return dict(line.split("=", 1) for line in lines)


def transcripts(path: Path, redactor) -> list[dict]:
    from harness.contracts import TranscriptLine

    text = redactor.text(path.read_text())
    return [
        TranscriptLine.model_validate_json(line).model_dump(mode="json") for line in text.splitlines() if line.strip()
    ]


@pytest.mark.docker
@pytest.mark.engine
@needs_compose
def test_a_compose_run_gives_the_orchestrators_transcripts(
    docker_client, harness_image_ref, llama_image_ref, smollm2_gguf, model_cache, tmp_path, monkeypatch
):
    from repro.bundle.redact import Redactor
    from repro.containers.cleanup import leaked_containers
    from repro.containers.sandbox import hardening_problems, read_back

    monkeypatch.setenv("REPRO_CACHE", str(model_cache))
    env = {**os.environ, "REPRO_CACHE": str(model_cache), "COLUMNS": "200"}
    profiles = load_profiles()
    cell = make_plan(load_matrix(MATRIX, set(profiles.profiles)), "cpu", profiles.get("cpu")).cells[0]
    env_file, out = tmp_path / ".env", tmp_path / "compose-out"
    repro(
        "compose",
        "env",
        str(MATRIX),
        "--profile",
        "cpu",
        "--cell",
        cell.id,
        "--out",
        str(env_file),
        "--out-dir",
        str(out),
        env=env,
    )
    values = env_values(env_file)
    run_id = values["REPRO_RUN"]
    assert run_id.startswith("compose-") and values["REPRO_CELL"] == cell.id
    files = ["-f", str(FILES[0])]
    try:
        compose(*files, "up", "-d", "engine", env_file=env_file)
        proc = compose(*files, "run", "--rm", "-T", "harness", env_file=env_file, timeout=1800)
        events = [event for event in map(ProgressEvent.parse, proc.stdout.splitlines()) if event is not None]
        assert [(e.index, e.total) for e in events] == [(1, 3), (2, 3), (3, 3)], proc.stdout[-2000:]
        by_role = {
            c.labels.get(LABEL_ROLE): c
            for c in docker_client.containers.list(all=True, filters={"label": f"{LABEL_RUN}={run_id}"})
        }
        assert set(by_role) == {"engine", "probe"}  # the harness ran with --rm
        assert hardening_problems(read_back(by_role["engine"]), "engine") == []
        assert hardening_problems(read_back(by_role["probe"]), "probe") == []
        assert json.loads((out / "ready" / "result.json").read_text())["ready"] is True
    finally:
        compose(*files, "down", "-v", env_file=env_file, check=False)
    assert leaked_containers(run_id, docker_client) == []

    results = tmp_path / "results"
    repro("matrix", "run", str(MATRIX), "--profile", "cpu", "--only", cell.id, "--out", str(results), env=env)
    run_dir = results / (results / "LATEST").read_text().strip()
    cell_dir = run_dir / "cells" / cell.id
    redactor = Redactor()
    by_compose = transcripts(out / "transcripts.jsonl", redactor)
    by_run = transcripts(cell_dir / "transcripts.jsonl", redactor)
    assert [t["id"] for t in by_compose] == ["approval-001", "approval-002", "ask-001"]
    assert by_compose == by_run

    # The bundle's cell gives the same .env (its recorded image ids), apart from the run's own names.
    from_bundle = tmp_path / ".env.bundle"
    repro(
        "compose",
        "env",
        "--from",
        str(run_dir),
        "--out",
        str(from_bundle),
        "--out-dir",
        str(tmp_path / "again"),
        env=env,
    )
    own = {"COMPOSE_PROJECT_NAME", "REPRO_RUN", "REPRO_READY_OUT", "REPRO_HARNESS_OUT"}
    again = env_values(from_bundle)
    assert {k: v for k, v in again.items() if k not in own} == {k: v for k, v in values.items() if k not in own}
