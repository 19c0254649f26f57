"""Build plans: how to build the harness image and each engine image, and what a matrix needs on
a variant, each with its content key computed without fetching anything."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial, reduce
from pathlib import Path
from typing import TYPE_CHECKING

from repro.core.config import PROJECT_ROOT
from repro.core.errors import BadInput, ReproError
from repro.core.files import sha256_bytes
from repro.spec.matrix import EngineSpec, LoadedMatrix, Variant
from repro.store.images.bases import client_or_default, configured_base, cuda_architectures, resolve_base, variant_bases
from repro.store.images.keys import (
    HARNESS_DOCKERFILE,
    HARNESS_LOCK,
    Blocked,
    BuildPlan,
    DigestPin,
    harness_source_digest,
    image_key,
)
from repro.store.images.wheels import WHEEL_IMPLEMENTATION, WHEEL_PLATFORM, WHEEL_PYTHON

if TYPE_CHECKING:
    from repro.containers.client import DockerClient

__all__ = ["build_plan_engine", "build_plan_harness", "engine_image_name", "needed_images"]


def build_plan_harness(client: DockerClient | None = None, *, root: Path = PROJECT_ROOT) -> BuildPlan:
    client = client_or_default(client)
    dockerfile = root / HARNESS_DOCKERFILE
    lock = root / HARNESS_LOCK
    for needed in (dockerfile, lock):
        if not needed.is_file():
            raise ReproError(f"{needed} is missing")
    base = configured_base()
    buildargs = {"BASE_IMAGE": base}
    base_ids = {"BASE_IMAGE": resolve_base(base, client)}
    tree = harness_source_digest(root)
    inputs = {
        "harness_tree": tree,
        "requirements_sha256": sha256_bytes(lock.read_bytes()),
        "wheel_target": f"{WHEEL_IMPLEMENTATION}{WHEEL_PYTHON}-{WHEEL_PLATFORM}",
    }
    dockerfile_sha = sha256_bytes(dockerfile.read_bytes())
    key = image_key("harness", dockerfile_sha, buildargs, inputs, base_ids)
    labels = {
        "repro.key": key,
        "repro.kind": "harness",
        "repro.source": f"tree:{tree}",
        "repro.harness_tree": tree,
        "repro.requirements_sha256": inputs["requirements_sha256"],
        "repro.dockerfile_sha256": dockerfile_sha,
        "repro.base_image": base,
        "repro.base_id": base_ids["BASE_IMAGE"],
    }
    return BuildPlan(
        name="harness",
        kind="harness",
        dockerfile=dockerfile,
        buildargs=buildargs,
        inputs=inputs,
        base_ids=base_ids,
        key=key,
        labels=labels,
        source=f"tree:{tree}",
    )


def engine_image_name(engine: EngineSpec, variant: str) -> str:
    return f"{engine.id}-{variant}"


def build_plan_engine(
    engine: EngineSpec,
    variant: Variant,
    client: DockerClient | None = None,
    *,
    root: Path = PROJECT_ROOT,
    compute_capability: str | None = None,
) -> BuildPlan:
    """How to build an engine image; for CUDA, `compute_capability` (a profile's) picks the one
    architecture to compile for (None: every architecture the Dockerfile lists)."""
    client = client_or_default(client)
    if engine.build is None:
        raise BadInput(f"engine {engine.id} is pinned by image digest, not built")
    relative = engine.build.dockerfile_for(variant)
    if relative is None:
        raise BadInput(f"engine {engine.id} has no Dockerfile for the {variant} variant")
    dockerfile = root / relative
    if not dockerfile.is_file():
        raise BadInput(f"engine {engine.id}: Dockerfile {relative} not found")
    source = engine.build.source
    bases = variant_bases(dockerfile, variant)
    buildargs = {**bases, **source_buildargs(engine)}
    if variant == "cuda":
        buildargs["CUDA_ARCHITECTURES"] = cuda_architectures(dockerfile, compute_capability)
    base_ids = {name: resolve_base(reference, client) for name, reference in bases.items()}
    inputs = {"source_sha256": source.sha256}
    if source.go is not None:  # the module's h1: covers its go.sum, which pins every module it builds with
        inputs |= {"go_sum": source.go.sum, "go_toolchain_sum": source.go.toolchain_sum}
    dockerfile_sha = sha256_bytes(dockerfile.read_bytes())
    key = image_key("engine", dockerfile_sha, buildargs, inputs, base_ids)
    build_info = engine.stamped_build_info() or ""
    # Labels travel into result bundles: name a local archive by its file name, never its path.
    source_label = f"archive:{Path(source.archive).name}" if source.archive else source.describe()
    labels = {
        "repro.key": key,
        "repro.kind": "engine",
        "repro.engine": engine.id,
        "repro.engine_kind": engine.kind,
        "repro.variant": variant,
        "repro.source": source_label,
        "repro.source_sha256": source.sha256,
        "repro.build_info": build_info,
        "repro.dockerfile": relative,
        "repro.dockerfile_sha256": dockerfile_sha,
        "repro.base_image": bases["BASE_IMAGE"],
        "repro.base_id": base_ids["BASE_IMAGE"],
        "repro.build_base_image": bases["BUILD_BASE_IMAGE"],
        "repro.build_base_id": base_ids["BUILD_BASE_IMAGE"],
    }
    if "CUDA_ARCHITECTURES" in buildargs:
        labels["repro.cuda_architectures"] = buildargs["CUDA_ARCHITECTURES"]
    if source.go is not None:
        labels |= {
            "repro.go_module": f"{source.go.module}@{source.go.version}",
            "repro.go_sum": source.go.sum,
            "repro.go_toolchain": source.go.toolchain,
            "repro.go_toolchain_sum": source.go.toolchain_sum,
            "repro.cpu_flags": engine.build.cpu_flags,
            "repro.version": engine.version or "",
        }
    return BuildPlan(
        name=engine_image_name(engine, variant),
        kind="engine",
        dockerfile=dockerfile,
        buildargs=buildargs,
        inputs=inputs,
        base_ids=base_ids,
        key=key,
        labels=labels,
        source=source_label,
        engine=engine,
        variant=variant,
    )


def source_buildargs(engine: EngineSpec) -> dict[str, str]:
    """The build arguments that name the source (a source archive; or a Go module, its toolchain
    and the CPU flags its C code gets) and those its kind stamps the build with (its row's
    `build_args`: llama.cpp's build number and commit, Ollama's version)."""
    assert engine.build is not None
    source = engine.build.source
    if source.go is None:
        named = {"SOURCE_SHA256": source.sha256}
    else:
        named = {
            "GO_MODULE": source.go.module,
            "GO_VERSION": source.go.version,
            "GO_TOOLCHAIN": source.go.toolchain_version,
            "CPU_FLAGS": engine.build.cpu_flags,
        }
    return named | {arg: field_text(engine, field) for arg, field in engine.facts.build_args.items()}


def field_text(engine: EngineSpec, field: str) -> str:
    """A field of the engine's spec by its dotted name ("build.build_number"), as text ("" unset)."""
    value = reduce(getattr, field.split("."), engine)
    return "" if value is None else str(value)


def needed_images(
    loaded: LoadedMatrix,
    variant: Variant,
    client: DockerClient | None = None,
    *,
    engine_ids: list[str] | None = None,
    collect: bool = False,
    compute_capability: str | None = None,
) -> list[BuildPlan | DigestPin | Blocked]:
    """What a matrix needs on a variant: the harness image, then each engine serving it
    (CUDA engines for `compute_capability`, a profile's, when given).

    A plan that cannot be computed raises, or with `collect` comes back as `Blocked`.
    """
    client = client_or_default(client)
    needs: list[BuildPlan | DigestPin | Blocked] = []

    def add(name: str, make: Callable[[], BuildPlan | DigestPin | Blocked]) -> None:
        try:
            needs.append(make())
        except ReproError as error:
            if not collect:
                raise
            needs.append(Blocked(name=name, reason=error.lines[0]))

    add("harness", lambda: build_plan_harness(client))
    for engine in loaded.matrix.engines:
        if engine_ids is not None and engine.id not in engine_ids:
            continue
        if not engine.serves(variant):
            continue
        if engine.image is not None:
            needs.append(DigestPin(name=engine.id, reference=engine.image, engine=engine))
        elif not engine.facts.in_harness_image:  # else it runs in the harness image, already needed
            add(
                engine_image_name(engine, variant),
                partial(build_plan_engine, engine, variant, client, compute_capability=compute_capability),
            )
    return needs
