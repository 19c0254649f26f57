"""An external suite's image rebuilt from a bundle's own pins (`repro images build --from-bundle
RUN`): the Dockerfile, driver and lock of the project at the bundle's commit, read with git archive
(never checked out), the pinned wheels, and this host's harness image below, which is not part of
the harness's code. What `repro check` needs to re-run an inspect task's scorers."""

from __future__ import annotations

import io
import tarfile
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from repro.bundle.layout.reader import BundleReader
from repro.core.config import PROJECT_ROOT
from repro.core.errors import BadInput, ReproError
from repro.core.git import git, has_commit
from repro.spec.matrix import Suite
from repro.store.images import ImageRef, Log, harness_image, quiet, resolve_plan
from repro.suites.external.base import adapter_of
from repro.suites.external.image import build_external, build_plan
from repro.suites.external.raw import external_of

if TYPE_CHECKING:
    from repro.containers.client import DockerClient


# The labels that name an external image's code: two images alike in these run one scorer (the
# harness image below it does not enter the harness's code).
SAME_CODE = (
    "repro.external",
    "repro.external.wheel_sha256",
    "repro.external.requirements_sha256",
    "repro.external.driver_sha256",
)


def bundle_images(run_dir: Path, client: DockerClient, log: Log = quiet) -> list[tuple[str, ImageRef]]:
    """(suite id, image) for each external suite a bundle's cells ran in, built when missing from
    the bundle's own pins: the Dockerfile, driver and lock of the project at the bundle's commit
    (read with git archive, never checked out), its pinned wheels, and this host's harness image
    below (not part of the harness's code). Each image's code labels must be those its cells record."""
    reader = BundleReader(run_dir)
    wanted = recorded_suites(reader)
    commit = reader.run().source.commit
    if wanted and (commit is None or not has_commit(PROJECT_ROOT, commit)):
        raise BadInput(
            f"{run_dir.name}: its commit {commit or '(none recorded)'} is not in this checkout ({PROJECT_ROOT}): "
            "fetch it (git fetch), then rerun"
        )
    built = []
    with tempfile.TemporaryDirectory(prefix="repro-bundle-images-") as folder:
        for suite, labels in wanted.values():
            built.append((suite.id, bundle_image(suite, labels, str(commit), Path(folder) / suite.id, client, log)))
    return built


def recorded_suites(reader: BundleReader) -> dict[str, tuple[Suite, dict[str, str]]]:
    """Suite id -> (the suite, its image's labels as a cell records them), for each external suite that ran."""
    found: dict[str, tuple[Suite, dict[str, str]]] = {}
    for cell_id in reader.cell_ids():
        record = reader.cell(cell_id)
        image = record.harness_image
        if record.cell.suite.external is not None and image is not None and "repro.external" in image.labels:
            found.setdefault(record.cell.suite.id, (record.cell.suite, dict(image.labels)))
    return found


def bundle_image(
    suite: Suite, labels: dict[str, str], commit: str, root: Path, client: DockerClient, log: Log
) -> ImageRef:
    adapter = adapter_of(suite)
    tree_at(commit, root, [adapter.image_dir, external_of(suite).requirements.path])
    plan = build_plan(suite, adapter, harness_image(client, build=True, log=log), root=root)
    differ = [label for label in SAME_CODE if plan.labels.get(label) != labels.get(label)]
    if differ:
        raise ReproError(
            f"suite {suite.id}: the files at commit {commit[:12]} give {', '.join(differ)} other than the image "
            "its cells ran in records"
        )
    return resolve_plan(plan, client) or build_external(plan, suite, adapter, client, log, root)


def tree_at(commit: str, root: Path, paths: list[str]) -> None:
    """The project's `paths` as they were at `commit`, unpacked under `root` (regular files and folders alone)."""
    archive = git(PROJECT_ROOT, "archive", "--format=tar", commit, "--", *sorted(set(paths)))
    if archive is None:
        raise BadInput(f"commit {commit[:12]} of this checkout lacks {', '.join(paths)}")
    root.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(root, members=[m for m in tar.getmembers() if m.isfile() or m.isdir()], filter="data")
