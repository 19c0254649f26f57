"""The GPU engine image without a registry: Dockerfile.cuda on the offline base (Debian's CUDA 11.8).

`cuda_build` (slow, not in the default run): builds `repro/llamacpp-b11434-cuda` for gpu-t4's
compute capability (7.5) the way `repro images build --profile gpu-t4` does, finds the stamped
build in the binary, reads the machine code and PTX it embeds (`cuobjdump`: the build's own
listing kept in the image, and the host's cuobjdump on the binary where one is installed),
checks that no driver library (libcuda.so*) is in the image, boots it on gpu-t4 with a stub
libcuda.so.1 (the toolkit's, from the build stage) and a fake nvidia-smi that prints a Tesla T4
(the engine must refuse to run: CUDA failed, it would serve on the CPU), and checks that
`repro doctor` says a GPU is needed to run it. Running the server on a GPU needs one; this
machine has none. Run it under the engine lock, niced:
`flock /tmp/repro-engine.lock nice -n 19 .venv/bin/python -m pytest -m cuda_build tests/compose/test_cuda_image.py`.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from repro.containers.sandbox import bind
from repro.core.config import DEFAULT_MATRIX, PROJECT_ROOT
from repro.engines.errors import EngineRefused
from repro.engines.llamacpp import LlamaCppEngine
from repro.spec.loading import load_matrix
from repro.spec.profiles import load_profiles
from repro.store.cuda_toolkit import embedded_problems, parse_cuobjdump
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
    assert every.buildargs["CUDA_ARCHITECTURES"] == "75;80;89" and every.key != plan.key


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
    ref = engine_image(
        engine, "cuda", docker_client, build=True, compute_capability=profile.compute_capability, log=print
    )
    labels = ref.labels
    assert labels["repro.variant"] == "cuda" and labels["repro.cuda_architectures"] == "75"
    assert labels["repro.build_info"] == engine.stamped_build_info() == "b11434-src-b0a2feb6"
    assert labels["repro.base_id"] == labels["repro.build_base_id"] == base_image_id
    config = docker_client.images.get(ref.id).attrs["Config"]
    assert (
        config["User"] == "10001:10001"
        and config["Entrypoint"] == ["/usr/local/bin/llama-server"]
        and not config.get("Cmd")
    )

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
    proc = subprocess.run(
        [sys.executable, "-m", "repro", "doctor"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    line = next(line for line in proc.stdout.splitlines() if "nvidia runtime" in line)
    assert "WARN" in line and "only the cpu profile can run" in line
    assert "gpu-*" in proc.stdout


STUB = "/usr/lib/x86_64-linux-gnu/stubs/libcuda.so"  # Debian's nvidia-cuda-dev, in the build stage
T4_ROW = "Tesla T4, 7.5, 535.183.01, 15360, [N/A]"


@pytest.fixture(scope="module")
def cuda_ref(docker_client, base_image_id):
    return engine_image(smoke_engine(), "cuda", docker_client, build=True, compute_capability="7.5", log=print)


def file_of(client, image: str, path: str) -> bytes:
    container = client.containers.create(image, labels=run_labels(purpose="cuda-file"), network_mode="none")
    try:
        stream, _ = container.get_archive(path)
        archive = tarfile.open(fileobj=io.BytesIO(b"".join(stream)))
        member = archive.extractfile(archive.getmembers()[0])
        assert member is not None
        return member.read()
    finally:
        container.remove(force=True)


def test_the_binary_embeds_sm_75_machine_code_and_ptx_only(docker_client, cuda_ref, tmp_path):
    listing = file_of(docker_client, cuda_ref.id, "/usr/local/share/llama-server.cuda-objects").decode()
    assert embedded_problems(parse_cuobjdump(listing), ["75"]) == [], listing[:2000]
    cuobjdump = shutil.which("cuobjdump")
    if cuobjdump:  # the host's own reading of the same binary
        binary = tmp_path / "llama-server"
        binary.write_bytes(binary_of(docker_client, cuda_ref.id))
        again = "".join(
            subprocess.run([cuobjdump, flag, str(binary)], capture_output=True, text=True, check=True).stdout
            for flag in ("--list-elf", "--list-ptx")
        )
        assert embedded_problems(parse_cuobjdump(again), ["75"]) == []


def test_no_driver_library_is_in_the_image(docker_client, cuda_ref):
    container = docker_client.containers.create(
        cuda_ref.id,
        entrypoint=["/usr/bin/find", "/", "-xdev", "-name", "libcuda.so*"],
        user="0",
        labels=run_labels(purpose="cuda-libcuda"),
        network_mode="none",
    )
    try:
        container.start()
        container.wait(timeout=120)
        found = container.logs(stdout=True, stderr=False).decode().split()
    finally:
        container.remove(force=True)
    assert found == []  # the NVIDIA runtime mounts the host driver's; one in the image would shadow it


def builder_stage(docker_client, tmp_path):
    """The build stage of the same build (every layer cached by the image's build), tagged for this test."""
    from repro.store.sources import fetch_source

    plan = build_plan_engine(smoke_engine(), "cuda", docker_client, compute_capability="7.5")
    context = tmp_path / "context"
    context.mkdir()
    (context / "Dockerfile").write_bytes(plan.dockerfile.read_bytes())
    (context / "source.archive").symlink_to(fetch_source(plan.engine.build.source))
    tag = f"repro-test/cuda-build:{plan.key[:16]}"
    for _ in docker_client.api.build(
        path=str(context),
        dockerfile="Dockerfile",
        tag=tag,
        target="build",
        buildargs=plan.buildargs,
        network_mode="host",
        pull=False,
        decode=True,
        rm=True,
    ):
        pass
    return tag


class StubbedCudaEngine(LlamaCppEngine):
    """The CUDA engine with no GPU: no device request, the toolkit's stub libcuda.so.1 and an
    nvidia-smi that names a Tesla T4 (what a host with a broken driver setup looks like)."""

    mounts: list = []

    def container_kwargs(self, launch, *, host_cpus=None, name=None):
        kwargs = super().container_kwargs(launch, host_cpus=host_cpus, name=name)
        kwargs.pop("device_requests", None)
        kwargs["mounts"] = [*kwargs["mounts"], *self.mounts]
        return kwargs


def test_a_cuda_boot_without_working_cuda_is_refused_not_run_on_the_cpu(
    docker_client, cuda_ref, harness_image_ref, smollm2_spec, smollm2_gguf, TEST_RUN_ID, tmp_path
):
    import tempfile

    tag = builder_stage(docker_client, tmp_path)
    try:
        stub = file_of(docker_client, tag, STUB)
    finally:
        docker_client.images.remove(tag, noprune=True)
    shared = Path(tempfile.mkdtemp(prefix="repro-cuda-stub-"))
    shared.chmod(0o755)
    (shared / "libcuda.so.1").write_bytes(stub)
    smi = shared / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\necho '{T4_ROW}'\n")
    for path in (shared / "libcuda.so.1", smi):
        path.chmod(0o755)
    engine = StubbedCudaEngine(
        docker_client, smoke_engine(), probe_image=harness_image_ref, run_id=TEST_RUN_ID, group_id="cuda-stub"
    )
    engine.mounts = [
        bind(shared / "libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", read_only=True),
        bind(smi, "/usr/local/bin/nvidia-smi", read_only=True),
    ]
    profile = load_profiles().get(PROFILE)
    with pytest.raises(EngineRefused) as caught:
        decoding = load_matrix(DEFAULT_MATRIX).matrix.decoding
        engine.start(engine.boot_spec(cuda_ref, smollm2_spec, smollm2_gguf, profile, decoding, profile_name=PROFILE))
    assert "CUDA failed to initialise" in str(caught.value) and "served on the CPU" in str(caught.value)
