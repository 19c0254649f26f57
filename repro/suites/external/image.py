"""The image an external suite runs in: the harness image plus the harness's pinned wheels.

Tag `repro/<adapter>:<key16>`, where the key covers the Dockerfile, the driver, the lock's bytes
(every wheel's sha256), the harness wheel's pinned sha256 and the id of the harness image it
builds on (itself content-keyed on harness/ and its own lock). Built offline like the harness
image: the wheels are fetched and verified on the host (repro.suites.external.wheels) and installed
with `pip install --no-index` after `sha256sum -c`; nothing is fetched inside the build.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from repro.core.config import PROJECT_ROOT
from repro.core.errors import ReproError
from repro.core.files import sha256_bytes
from repro.spec.matrix import Suite
from repro.store.images import KEY_SCHEMA, BuildPlan, ImageRef, Log, _link_or_copy, _quiet, build_in_context, content_key, harness_image, resolve_plan
from repro.suites.external import adapter_for
from repro.suites.external.wheels import fetch_wheels, lock_file

if TYPE_CHECKING:
    from rich.console import Console

    from repro.containers.client import DockerClient
    from repro.spec.matrix import LoadedMatrix


def build_plan(suite: Suite, harness: ImageRef, *, root: Path = PROJECT_ROOT) -> BuildPlan:
    """How to build an external suite's image, and its content key (nothing is fetched)."""
    assert suite.external is not None
    adapter = adapter_for(suite)
    folder = root / adapter.image_dir
    dockerfile, driver = folder / "Dockerfile", folder / adapter.driver
    for needed in (dockerfile, driver):
        if not needed.is_file():
            raise ReproError(f"{needed.relative_to(root)} is missing")
    buildargs = {"HARNESS_IMAGE": harness.reference}
    base_ids = {"HARNESS_IMAGE": harness.id}
    inputs = {
        "wheel": suite.external.wheel,
        "wheel_sha256": suite.external.sha256,
        "requirements_sha256": sha256_bytes(lock_file(suite.external, root).read_bytes()),
        "driver_sha256": sha256_bytes(driver.read_bytes()),
    }
    dockerfile_sha = sha256_bytes(dockerfile.read_bytes())
    key = content_key(
        {"schema": KEY_SCHEMA, "kind": "external", "dockerfile_sha256": dockerfile_sha, "buildargs": buildargs, "inputs": inputs, "base_ids": base_ids}
    )
    labels = {
        "repro.key": key,
        "repro.kind": "external",
        "repro.external": adapter.name,
        "repro.source": f"pypi:{suite.external.wheel}",
        "repro.external.wheel": suite.external.wheel,
        "repro.external.wheel_sha256": suite.external.sha256,
        "repro.external.requirements_sha256": inputs["requirements_sha256"],
        "repro.suites.external.driver_sha256": inputs["driver_sha256"],
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


def external_image(suite: Suite, client: DockerClient | None = None, *, harness: ImageRef | None = None, build: bool = False, log: Log = _quiet) -> ImageRef:
    """The suite's image for the current tree; built when asked (else a missing image is an error)."""
    from repro.store.images import _client

    client = _client(client)
    harness = harness or harness_image(client, build=build, log=log)
    plan = build_plan(suite, harness)
    found = resolve_plan(plan, client)
    if found is not None:
        return found
    if not build:
        raise ReproError(f"image {plan.tag} is missing; run: repro images build --matrix MATRIX")
    return build_external(plan, suite, client, log)


def build_external(plan: BuildPlan, suite: Suite, client: DockerClient, log: Log) -> ImageRef:
    assert suite.external is not None
    adapter = adapter_for(suite)
    wheels_dir = fetch_wheels(suite.external, log=log)

    def fill(context: Path) -> None:
        (context / "Dockerfile").write_bytes(plan.dockerfile.read_bytes())
        (context / adapter.driver).write_bytes((plan.dockerfile.parent / adapter.driver).read_bytes())
        wheels = context / "wheels"
        wheels.mkdir()
        for wheel in sorted(wheels_dir.glob("*.whl")):
            _link_or_copy(wheel, wheels / wheel.name)
        sums = "".join(f"{sha256_bytes(w.read_bytes())}  {w.name}\n" for w in sorted(wheels.glob("*.whl")))
        (wheels / "SHA256SUMS").write_text(sums)

    return build_in_context(plan, client, fill, log)


def build_external_images(loaded: LoadedMatrix, client: DockerClient, console: Console, verbose: bool) -> None:
    """`repro images build`: each external suite's image (its wheels fetched and verified first)."""
    import time

    from rich.markup import escape

    suites = [suite for suite in loaded.matrix.suites if suite.external is not None]
    if not suites:
        return
    harness = harness_image(client)
    log = (lambda line: console.print(f"[dim]{escape(line)}[/]", soft_wrap=True)) if verbose else _quiet
    for suite in suites:
        plan = build_plan(suite, harness)
        found = resolve_plan(plan, client)
        if found is not None:
            console.print(f"[green]up to date[/] {plan.tag} ({found.id[7:19]})")
            continue
        console.print(f"[bold]building[/] {plan.tag} ({plan.source} on {harness.reference})")
        started = time.monotonic()
        ref = build_external(plan, suite, client, log)
        console.print(f"[green]built[/]    {plan.tag} ({ref.id[7:19]}) in {time.monotonic() - started:.0f} s")
