"""The GPU engine image without a registry: Dockerfile.cuda on the offline base (Debian's CUDA 11.8).

`cuda_build` (slow, not in the default run): builds `repro/llamacpp-b11434-cuda` for gpu-t4's
compute capability (7.5) the way `repro images build --profile gpu-t4` does, finds the stamped
build in the binary, and checks that `repro doctor` says a GPU (the NVIDIA runtime) is needed
to run it. Running the server needs a GPU; this machine has none.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile

import pytest

from repro.core.config import DEFAULT_MATRIX, PROJECT_ROOT
from repro.spec.matrix import load_matrix
from repro.spec.profiles import load_profiles
from repro.store.images import build_plan_engine, engine_image
from tests.fixtures.docker import run_labels

pytestmark = [pytest.mark.docker, pytest.mark.cuda_build]
PROFILE = "gpu-t4"


def smoke_engine():
    return load_matrix(DEFAULT_MATRIX).matrix.engine("llamacpp-b11434")


def test_the_offline_cuda_plan_builds_for_the_profiles_capability_only(docker_client, base_image_id, monkeypatch):
    monkeypatch.delenv("REPRO_CUDA_BASES", raising=False)
    monkeypatch.delenv("REPRO_CUDA_BASE_IMAGE", raising=False)
    monkeypatch.delenv("REPRO_CUDA_BUILD_BASE_IMAGE", raising=False)
    profile = load_profiles().get(PROFILE)
    assert profile.compute_capability == "7.5"
    plan = build_plan_engine(smoke_engine(), "cuda", docker_client, compute_capability=profile.compute_capability)
    assert plan.buildargs["CUDA_ARCHITECTURES"] == "75"
    assert plan.base_ids == {"BASE_IMAGE": base_image_id, "BUILD_BASE_IMAGE": base_image_id}
    every = build_plan_engine(smoke_engine(), "cuda", docker_client)
    assert every.buildargs["CUDA_ARCHITECTURES"] == "75;80;86;89;90" and every.key != plan.key


def binary_of(client, image_id: str) -> bytes:
    container = client.containers.create(image_id, labels=run_labels(purpose="cuda-binary"), network_mode="none")
    try:
        stream, _ = container.get_archive("/usr/local/bin/llama-server")
        archive = tarfile.open(fileobj=io.BytesIO(b"".join(stream)))
        return archive.extractfile(archive.getmembers()[0]).read()
    finally:
        container.remove(force=True)


def test_the_cuda_image_builds_offline_with_the_stamped_build(docker_client, base_image_id, tmp_path, monkeypatch):
    monkeypatch.delenv("REPRO_CUDA_BASES", raising=False)
    profile = load_profiles().get(PROFILE)
    engine = smoke_engine()
    ref = engine_image(engine, "cuda", docker_client, build=True, compute_capability=profile.compute_capability, log=print)
    labels = ref.labels
    assert labels["repro.variant"] == "cuda" and labels["repro.cuda_architectures"] == "75"
    assert labels["repro.build_info"] == engine.stamped_build_info() == "b11434-src-b0a2feb6"
    assert labels["repro.base_id"] == labels["repro.build_base_id"] == base_image_id
    config = docker_client.images.get(ref.id).attrs["Config"]
    assert config["User"] == "10001:10001" and config["Entrypoint"] == ["/usr/local/bin/llama-server"] and not config.get("Cmd")

    binary = tmp_path / "llama-server"
    binary.write_bytes(binary_of(docker_client, ref.id))
    if shutil.which("strings"):
        text = subprocess.run(["strings", "-n", "6", str(binary)], capture_output=True, text=True, check=True).stdout
    else:
        text = binary.read_bytes().decode("latin-1")
    assert engine.build.build_commit in text  # LLAMA_COMMIT; the number is an int, printed by "(build %d, commit %s)"
    assert "(build %d, commit %s)" in text
    assert "libcublas.so.11" in text and "libcudart.so.11.0" in text  # Debian's CUDA 11.8, linked dynamically


def test_doctor_says_a_gpu_is_needed_to_run_it(docker_client):
    if "nvidia" in (docker_client.info().get("Runtimes") or {}):
        pytest.skip("this machine has the NVIDIA runtime")
    proc = subprocess.run([sys.executable, "-m", "repro", "doctor"], cwd=PROJECT_ROOT, capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    line = next(line for line in proc.stdout.splitlines() if "nvidia runtime" in line)
    assert "WARN" in line and "only the cpu profile can run" in line
    assert "gpu-*" in proc.stdout
