"""The Dockerfiles in images/: build arguments, pinned bases, hardening, the wheel lock."""

from __future__ import annotations

import re
import tomllib

import pytest

from repro.core.config import PROJECT_ROOT
from repro.store.images import HARNESS_DOCKERFILE, HARNESS_LOCK, dockerfile_args

CPU = PROJECT_ROOT / "images/llama-cpp/Dockerfile"
CUDA = PROJECT_ROOT / "images/llama-cpp/Dockerfile.cuda"
HARNESS = PROJECT_ROOT / HARNESS_DOCKERFILE
ALL = [CPU, CUDA, HARNESS]
DIGEST = re.compile(r"^[a-z0-9][a-z0-9._/:-]*@sha256:[0-9a-f]{64}$")
ENGINE_ARGS = {"BASE_IMAGE", "BUILD_BASE_IMAGE", "SOURCE_SHA256", "LLAMA_BUILD_NUMBER", "LLAMA_BUILD_COMMIT"}


def instructions(path) -> list[str]:
    text = re.sub(r"\\\n", " ", path.read_text())
    return [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]


def test_cuda_and_cpu_take_the_same_build_arguments():
    cpu, cuda = dockerfile_args(CPU), dockerfile_args(CUDA)
    assert set(cuda) - set(cpu) == {"CUDA_ARCHITECTURES"}  # the profile's compute capability only
    assert set(cpu) <= set(cuda) and ENGINE_ARGS <= set(cpu)


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name if p != HARNESS else "harness")
def test_the_base_is_a_build_argument_pinned_by_digest(path):
    args = dockerfile_args(path)
    assert DIGEST.match(args["BASE_IMAGE"] or ""), args["BASE_IMAGE"]
    froms = [line for line in instructions(path) if line.upper().startswith("FROM ")]
    external = [line.split()[1] for line in froms if line.split()[1].startswith("$")]
    assert external, "no FROM takes the base argument"
    assert all(ref in ("${BASE_IMAGE}", "${BUILD_BASE_IMAGE}") for ref in external)
    named_stages = {line.split()[-1] for line in froms if " AS " in line.upper()}
    for line in froms:
        ref = line.split()[1]
        assert ref.startswith("$") or ref in named_stages, (
            f"{path.name}: {line} is neither the base argument nor a stage"
        )


def test_the_cuda_bases_are_cuda_images_pinned_by_digest():
    args = dockerfile_args(CUDA)
    assert args["BASE_IMAGE"].startswith("nvidia/cuda:") and "-runtime-" in args["BASE_IMAGE"]
    assert args["BUILD_BASE_IMAGE"].startswith("nvidia/cuda:") and "-devel-" in args["BUILD_BASE_IMAGE"]
    assert DIGEST.match(args["BUILD_BASE_IMAGE"])
    text = CUDA.read_text()
    assert "-DGGML_CUDA=ON" in text
    assert '-DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHITECTURES}"' in text
    # the profiles' capabilities CUDA 11.8 builds (repro.cuda_toolkit)
    assert args["CUDA_ARCHITECTURES"].strip('"') == "75;80;89"


@pytest.mark.parametrize("path", [CPU, CUDA], ids=["cpu", "cuda"])
def test_the_engine_build_checks_the_source_and_stamps_the_build(path):
    text = path.read_text()
    lines = instructions(path)
    check = next(i for i, line in enumerate(lines) if "sha256sum -c" in line)
    compile_ = next(i for i, line in enumerate(lines) if "cmake --build" in line)
    assert check < compile_, "the source hash must be checked before anything compiles"
    assert "expected ${SOURCE_SHA256}, got ${actual}" in text
    for flag in (
        "-DGGML_NATIVE=OFF",
        "-DLLAMA_CURL=OFF",
        "-DLLAMA_OPENSSL=OFF",
        '-DLLAMA_BUILD_NUMBER="${LLAMA_BUILD_NUMBER}"',
        '-DLLAMA_BUILD_COMMIT="${LLAMA_BUILD_COMMIT}"',
    ):
        assert flag in text, flag
    assert lines[-1] == 'ENTRYPOINT ["/usr/local/bin/llama-server"]'
    runtime = lines[max(i for i, line in enumerate(lines) if line.startswith("FROM ")) :]
    assert "USER 10001:10001" in runtime


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name if p != HARNESS else "harness")
def test_apt_installs_without_recommends(path):
    for line in instructions(path):
        for install in re.findall(r"apt-get install[^&;]*", line):
            assert "--no-install-recommends" in install, install


def test_the_harness_image_runs_the_harness_as_non_root_without_writing():
    lines = instructions(HARNESS)
    runtime = lines[max(i for i, line in enumerate(lines) if line.startswith("FROM ")) :]
    assert "USER 10001:10001" in runtime
    assert any("PYTHONDONTWRITEBYTECODE=1" in line for line in runtime if line.startswith("ENV"))
    assert lines[-1] == 'ENTRYPOINT ["python3", "-m", "harness"]'
    text = HARNESS.read_text()
    assert "--no-index" in text and "sha256sum --strict -c SHA256SUMS" in text


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_the_wheel_lock_pins_every_base_dependency_with_a_hash():
    lock = (PROJECT_ROOT / HARNESS_LOCK).read_text()
    pins = dict(re.findall(r"^([a-z0-9][a-z0-9._-]*)==(\S+) \\\n\s+--hash=sha256:[0-9a-f]{64}$", lock, re.M))
    entries = [line for line in lock.splitlines() if re.match(r"^[A-Za-z0-9]", line)]
    assert len(pins) == len(entries), "every requirement carries one sha256 hash"
    dependencies = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for requirement in dependencies:
        assert _name(requirement) in pins, f"{requirement} is not in {HARNESS_LOCK}"
    assert "docker" not in pins and "typer" not in pins  # host-only packages stay out of the harness image
