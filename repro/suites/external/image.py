"""The image an external suite runs in: the harness image plus the harness's pinned code.

Tag `repro/<adapter>:<key16>`, where the key covers the Dockerfile, the driver, the lock's bytes
(every wheel's sha256), the harness's pinned sha256 (its wheel, or its source archive) and the id
of the harness image it builds on (itself content-keyed on harness/ and its own lock). Built
offline like the harness image: the wheels and the archive are fetched and verified on the host
(repro.suites.external.wheels) and installed with `pip install --no-index` after `sha256sum -c`; the
archive lies in the context as `source/<sha256>.<ext>` with its own `source/SHA256SUMS`; nothing
is fetched inside the build.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from repro.core.config import PROJECT_ROOT
from repro.core.errors import ReproError
from repro.core.files import sha256_bytes
from repro.spec.matrix import Suite
from repro.store.images import (
    BuildPlan,
    ImageRef,
    Log,
    build_in_context,
    harness_image,
    image_key,
    link_or_copy,
    quiet,
    resolve_plan,
)
from repro.suites.external.raw import external_of
from repro.suites.external.wheels import fetch_wheels, lock_file

if TYPE_CHECKING:
    from repro.containers.client import DockerClient


class Adapter(Protocol):
    """What the image needs of an adapter (repro.suites.external.base.Adapter has it)."""

    name: str
    image_dir: str
    driver: str


def build_plan(suite: Suite, adapter: Adapter, harness: ImageRef, *, root: Path = PROJECT_ROOT) -> BuildPlan:
    """How to build an external suite's image, and its content key (nothing is fetched)."""
    external = external_of(suite)
    folder = root / adapter.image_dir
    dockerfile, driver = folder / "Dockerfile", folder / adapter.driver
    for needed in (dockerfile, driver):
        if not needed.is_file():
            raise ReproError(f"{needed.relative_to(root)} is missing")
    buildargs = {"HARNESS_IMAGE": harness.reference}
    base_ids = {"HARNESS_IMAGE": harness.id}
    inputs = {
        "wheel": external.pin,
        "wheel_sha256": external.sha256,
        "requirements_sha256": sha256_bytes(lock_file(external, root).read_bytes()),
        "driver_sha256": sha256_bytes(driver.read_bytes()),
    }
    dockerfile_sha = sha256_bytes(dockerfile.read_bytes())
    key = image_key("external", dockerfile_sha, buildargs, inputs, base_ids)
    labels = {
        "repro.key": key,
        "repro.kind": "external",
        "repro.external": adapter.name,
        "repro.source": f"pypi:{external.wheel}" if external.wheel else external.pin,
        "repro.external.wheel": external.pin,
        "repro.external.wheel_sha256": external.sha256,
        "repro.external.requirements_sha256": inputs["requirements_sha256"],
        "repro.external.driver_sha256": inputs["driver_sha256"],
        "repro.dockerfile_sha256": dockerfile_sha,
        "repro.base_image": harness.reference,
        "repro.base_id": harness.id,
    }
    return BuildPlan(
        name=adapter.name,
        kind="harness",
        dockerfile=dockerfile,
        buildargs=buildargs,
        inputs=inputs,
        base_ids=base_ids,
        key=key,
        labels=labels,
        source=labels["repro.source"],
    )


def external_image(
    suite: Suite,
    adapter: Adapter,
    client: DockerClient | None = None,
    *,
    harness: ImageRef | None = None,
    build: bool = False,
    log: Log = quiet,
) -> ImageRef:
    """The suite's image for the current tree; built when asked (else a missing image is an error)."""
    from repro.store.images import client_or_default

    client = client_or_default(client)
    harness = harness or harness_image(client, build=build, log=log)
    plan = build_plan(suite, adapter, harness)
    found = resolve_plan(plan, client)
    if found is not None:
        return found
    if not build:
        raise ReproError(f"image {plan.tag} is missing; run: repro images build MATRIX")
    return build_external(plan, suite, adapter, client, log)


def build_external(
    plan: BuildPlan, suite: Suite, adapter: Adapter, client: DockerClient, log: Log, root: Path = PROJECT_ROOT
) -> ImageRef:
    external = external_of(suite)
    wheels_dir = fetch_wheels(external, log=log, root=root)
    lock = lock_file(external, root)
    archive = None
    if external.wheel is None:
        from repro.store.sources import fetch_source

        archive = fetch_source(external.source, log=log)

    def fill(context: Path) -> None:
        (context / "Dockerfile").write_bytes(plan.dockerfile.read_bytes())
        (context / adapter.driver).write_bytes((plan.dockerfile.parent / adapter.driver).read_bytes())
        (context / "requirements.txt").write_bytes(lock.read_bytes())
        wheels = context / "wheels"
        wheels.mkdir()
        for wheel in sorted(wheels_dir.glob("*.whl")):
            link_or_copy(wheel, wheels / wheel.name)
        sums = "".join(f"{sha256_bytes(w.read_bytes())}  {w.name}\n" for w in sorted(wheels.glob("*.whl")))
        (wheels / "SHA256SUMS").write_text(sums)
        (context / "source").mkdir()
        if archive is not None:
            link_or_copy(archive, context / "source" / archive.name)
            (context / "source" / "SHA256SUMS").write_text(f"{sha256_bytes(archive.read_bytes())}  {archive.name}\n")

    return build_in_context(plan, client, fill, log)
