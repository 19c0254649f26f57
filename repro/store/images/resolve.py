"""Resolving images: a build plan's tag or a digest pin to the local image (never pulled), and
the harness and engine images a run uses, built when asked."""

from __future__ import annotations

from typing import TYPE_CHECKING

from repro.core.errors import BadInput, ReproError
from repro.spec.matrix import EngineSpec
from repro.store.images.bases import client_or_default, find_local
from repro.store.images.build import build_image
from repro.store.images.keys import BuildPlan, DigestPin, ImageRef, Log, quiet, ref_for_plan
from repro.store.images.plans import build_plan_engine, build_plan_harness

if TYPE_CHECKING:
    from repro.containers.client import DockerClient

__all__ = ["engine_image", "harness_image", "resolve_digest", "resolve_plan"]


def resolve_plan(plan: BuildPlan, client: DockerClient) -> ImageRef | None:
    image = find_local(plan.tag, client)
    if image is None:
        return None
    if (image.labels or {}).get("repro.key") != plan.key:
        raise ReproError(
            f"image {plan.tag} carries key {(image.labels or {}).get('repro.key')} instead of {plan.key}; remove it "
            f"(docker rmi {plan.tag}) and rebuild"
        )
    return ref_for_plan(plan, image)


def resolve_digest(pin: DigestPin, client: DockerClient) -> ImageRef:
    image = find_local(pin.reference, client)
    if image is None:
        raise ReproError(
            f"engine {pin.name}: image {pin.reference} is not present locally; pull it by digest first "
            f"(docker pull {pin.reference}); a run never pulls"
        )
    return ImageRef(
        name=pin.name,
        reference=pin.reference,
        key=None,
        id=image.id,
        pinned_by="digest",
        labels=dict(image.labels or {}),
    )


def _missing(plan: BuildPlan, matrix: str | None) -> ReproError:
    hint = f"repro images build {matrix}" if matrix else "repro images build MATRIX"
    if plan.variant and plan.variant != "cpu":
        hint += " --profile <a gpu profile>"
    return ReproError(f"image {plan.tag} is missing; run: {hint}")


def harness_image(client: DockerClient | None = None, *, build: bool = False, log: Log = quiet) -> ImageRef:
    """The harness image for the current tree (harness/ + pyproject.toml); build it if asked."""
    client = client_or_default(client)
    plan = build_plan_harness(client)
    found = resolve_plan(plan, client)
    if found is not None:
        return found
    if not build:
        raise _missing(plan, None)
    return build_image(plan, client, log=log)


def engine_image(
    engine: EngineSpec,
    variant: str,
    client: DockerClient | None = None,
    *,
    build: bool = False,
    log: Log = quiet,
    matrix: str | None = None,
    compute_capability: str | None = None,
) -> ImageRef:
    """The engine's image for a variant: by digest pin, or by content key (built if asked).
    CUDA images are built for `compute_capability` (a profile's) when given."""
    client = client_or_default(client)
    if not engine.serves(variant):  # type: ignore[arg-type]
        raise BadInput(f"engine {engine.id} has no {variant} image")
    if engine.image is not None:
        return resolve_digest(DigestPin(name=engine.id, reference=engine.image, engine=engine), client)
    if engine.facts.in_harness_image:  # the scripted engine runs in the harness image of this tree
        return harness_image(client, build=build, log=log)
    plan = build_plan_engine(engine, variant, client, compute_capability=compute_capability)  # type: ignore[arg-type]
    found = resolve_plan(plan, client)
    if found is not None:
        return found
    if not build:
        raise _missing(plan, matrix)
    return build_image(plan, client, log=log)
