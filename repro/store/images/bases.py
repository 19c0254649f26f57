"""The bases images build on: the offline base (or REPRO_BASE_IMAGE) for CPU images, the CUDA
bases and architectures for CUDA ones, resolved to local image ids (builds never pull)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from repro.core.errors import BadInput, ReproError
from repro.store.bootstrap import DEFAULT_SUITE, base_reference
from repro.store.images.keys import REPOSITORY, dockerfile_args

if TYPE_CHECKING:
    from repro.containers.client import DockerClient, Image

__all__ = [
    "CUDA_BASES_ENV",
    "base_image_id",
    "client_or_default",
    "configured_base",
    "cuda_architectures",
    "find_local",
    "resolve_base",
    "variant_bases",
]


def configured_base() -> str:
    """The base for CPU images: REPRO_BASE_IMAGE, else the bootstrapped repro/base:bookworm."""
    return os.environ.get("REPRO_BASE_IMAGE") or base_reference(DEFAULT_SUITE)


def client_or_default(client: DockerClient | None) -> DockerClient:
    if client is not None:
        return client
    from repro.containers.client import get_client

    return get_client()


def resolve_base(reference: str, client: DockerClient) -> str:
    """The local image id of a base reference, or a one-line ReproError saying how to get it."""
    from docker.errors import ImageNotFound

    try:
        return client.images.get(reference).id
    except ImageNotFound:
        if reference.startswith(f"{REPOSITORY}/base:"):
            suite = reference.split(":", 1)[1]
            raise ReproError(
                f"base image {reference} is missing; run: repro images bootstrap --suite {suite}"
            ) from None
        raise ReproError(
            f"base image {reference} is not present locally; pull it by digest first "
            f"(docker pull {reference}); builds never pull"
        ) from None


def base_image_id(client: DockerClient | None = None) -> str:
    """The id of the base CPU images build on (repro/base:bookworm unless REPRO_BASE_IMAGE)."""
    return resolve_base(configured_base(), client_or_default(client))


CUDA_BASES_ENV = "REPRO_CUDA_BASES"


def variant_bases(dockerfile: Path, variant: str) -> dict[str, str]:
    """BASE_IMAGE and BUILD_BASE_IMAGE for a variant (always passed explicitly as build args).

    CUDA builds on the offline base by default (Debian's nvidia-cuda-toolkit from non-free);
    REPRO_CUDA_BASES=registry takes the Dockerfile's nvidia/cuda bases pinned by digest, and
    REPRO_CUDA_BASE_IMAGE / REPRO_CUDA_BUILD_BASE_IMAGE name others.
    """
    if variant == "cpu":
        base = configured_base()
        return {"BASE_IMAGE": base, "BUILD_BASE_IMAGE": base}
    choice = os.environ.get(CUDA_BASES_ENV, "offline")
    if choice not in ("offline", "registry"):
        raise BadInput(f"{CUDA_BASES_ENV}={choice}: expected offline or registry")
    if choice == "registry":
        defaults = dockerfile_args(dockerfile)
        runtime, builder = defaults.get("BASE_IMAGE"), defaults.get("BUILD_BASE_IMAGE")
    else:
        runtime = builder = configured_base()
    runtime = os.environ.get("REPRO_CUDA_BASE_IMAGE") or runtime
    builder = os.environ.get("REPRO_CUDA_BUILD_BASE_IMAGE") or builder
    if not runtime or not builder:
        raise BadInput(
            f"{dockerfile}: needs ARG BASE_IMAGE and ARG BUILD_BASE_IMAGE defaults for the {variant} variant"
        )
    return {"BASE_IMAGE": runtime, "BUILD_BASE_IMAGE": builder}


def cuda_architectures(dockerfile: Path, compute_capability: str | None) -> str:
    """CMake CUDA architectures: the profile's compute capability only ("7.5" -> "75"), else every
    capability the CUDA profiles name that the toolkit builds (repro.store.cuda_toolkit; for the offline
    toolkit that is the Dockerfile's default, which a test keeps equal). A capability the toolkit
    cannot build is refused in one line before anything compiles."""
    from repro.spec.profiles import load_profiles
    from repro.store.cuda_toolkit import architecture, current_toolkit, profile_architectures, unbuildable_capability

    toolkit = current_toolkit()
    if compute_capability is None:
        found = profile_architectures(load_profiles().profiles.values(), toolkit)
        if not found:
            raise BadInput(f"{dockerfile}: no CUDA profile names a compute capability {toolkit.name} builds")
        return ";".join(found)
    refused = unbuildable_capability(compute_capability, "the CUDA image", toolkit)
    if refused:
        raise BadInput(refused)
    return architecture(compute_capability)


def find_local(reference: str, client: DockerClient) -> Image | None:
    """The local image of `reference`, None when there is none (never pulled)."""
    from docker.errors import ImageNotFound

    try:
        return client.images.get(reference)
    except ImageNotFound:
        return None
