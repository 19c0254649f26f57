"""`repro doctor MATRIX`: the pipeline layer by layer (host, images, models, engine, protocol)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from repro.__main__ import main

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "matrix" / "smoke.yaml"
PROTOCOLS = ("json_schema", "native_tools", "react", "json_prompt")


def doctor(*args: str, cache: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "250", **({"REPRO_CACHE": str(cache)} if cache else {})}
    return subprocess.run(
        [sys.executable, "-m", "repro", "doctor", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=1800,
    )


def lines(proc: subprocess.CompletedProcess, layer: str) -> list[str]:
    return [line for line in proc.stdout.splitlines() if line.split()[1:2] == [layer]]


def test_probe_needs_a_known_profile_and_a_readable_matrix(tmp_path, capsys):
    assert main(["doctor", str(SMOKE), "--profile", "nope"]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0
    assert main(["doctor", str(tmp_path / "missing.yaml")]) == 2


@pytest.mark.docker
def test_a_missing_model_fails_at_the_model_layer_and_boots_nothing(tmp_path, docker_client):
    proc = doctor(str(SMOKE), "--profile", "cpu", cache=tmp_path / "empty-cache")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    models = lines(proc, "models")
    assert len(models) == 2 and all(line.startswith("FAIL") and "not in the store" in line for line in models)
    assert lines(proc, "engine") == [] and lines(proc, "protocol") == []
    assert docker_client.containers.list(all=True, filters={"label": "repro.run=doctor-probe"}) == []


@pytest.mark.engine
def test_the_real_engine_is_probed_once_per_protocol(
    harness_image_ref, llama_image_ref, smollm2_gguf, model_cache, docker_client
):
    """SmolLM2 in the store (Qwen may not be): its chat template is read (from the GGUF, no
    tools), its engine boots sealed and reports the pinned identity, native_tools is EXCLUDED by
    the preflight (never probed), and every other protocol gets one round trip, OK or FAIL with
    the model's reason."""
    proc = doctor(str(SMOKE), "--profile", "cpu", cache=model_cache)
    print(proc.stdout)
    assert all(line.startswith("OK") for line in lines(proc, "images")), proc.stdout
    engine = [line for line in lines(proc, "engine") if "smollm2" in line]
    assert len(engine) == 2 and all(line.startswith("OK") for line in engine), proc.stdout
    template = [line for line in lines(proc, "configuration") if "smollm2" in line]
    assert template[0].startswith("OK") and "from gguf" in template[0] and "does not render tools" in template[0], (
        proc.stdout
    )
    assert any(line.startswith("WARN") and "native_tools" in line and "EXCLUDED" in line for line in template), (
        proc.stdout
    )
    trips = [line for line in lines(proc, "protocol") if "smollm2" in line]
    assert [next(p for p in PROTOCOLS if f" {p} round trip" in line) for line in trips] == [
        p for p in PROTOCOLS if p != "native_tools"
    ], proc.stdout
    assert all(line.startswith(("OK", "FAIL")) for line in trips)
    assert proc.returncode == (1 if "FAIL" in proc.stdout else 0)
    assert docker_client.containers.list(all=True, filters={"label": "repro.run=doctor-probe"}) == []
