"""A source-pinned harness's code for checking a bundle: the suite cache or a mirror, by sha256.

A run records that code by reference (run.json `inputs`, repro.suites.references) and never
carries it. Older bundles carried an archive no public address serves in `inputs/<sha256><ext>`
(Tholos-Bench's runner: repro.spec.matrix.ExternalSuite.carried); `repro check` still takes it
from there when the cache and the mirrors lack it, verified again against the pinned sha256 (a
copy of other bytes is a problem, never used), at most MAX_CARRIED_BYTES, never through a link.
`repro results reference` rewrites such a bundle so that it references the archive instead.
"""

from __future__ import annotations

from pathlib import Path

from repro.bundle.layout.names import INPUTS_DIR
from repro.bundle.layout.reader import BundleReader
from repro.core.errors import BadInput, NotAtHand
from repro.core.files import MAX_CARRIED_BYTES, sha256_file
from repro.spec.matrix import ExternalSuite
from repro.spec.published import published_at
from repro.store.sources import MIRROR_ENV, admit, archive_extension
from repro.suites.external.wheels import fetch_code, fetched_code


def carried_name(external: ExternalSuite) -> str:
    """The carried copy's name in inputs/: the pinned sha256 and the archive's extension."""
    return f"{external.sha256}{archive_extension(external.archive or '')}"


def carried_code(reader: BundleReader, external: ExternalSuite) -> Path | None:
    """The bundle's carried copy of a pin's archive, verified against the pin and unpacked into the
    suite cache (None when the bundle carries none; BadInput when its copy is not the pinned bytes)."""
    if external.archive is None:
        return None
    name = carried_name(external)
    path = reader.carried_file(name, MAX_CARRIED_BYTES)
    if path is None:
        return None
    found = sha256_file(path)
    if found != external.sha256:
        raise BadInput(
            f"the carried {INPUTS_DIR}/{name[:16]}... has sha256 {found[:12]}, the pin is {external.sha256[:12]}"
        )
    admit(path, external.source, copy=True)
    return fetch_code(external)


def harness_code(reader: BundleReader, external: ExternalSuite) -> Path:
    """A source-pinned harness's code for checking a bundle: the cache or a mirror, else the copy the
    bundle carries; NotAtHand (the cell is UNCHECKED) naming the command that makes it checkable."""
    found = fetched_code(external) or carried_code(reader, external)
    if found is not None:
        return found
    raise NotAtHand(
        f"{external.pin} (sha256 {external.sha256[:12]}; published: "
        f"{published_at(external.sha256, external.source.describe())}) is in neither the suite cache nor a mirror; "
        f"run: repro suites fetch --from-bundle {reader.dir} where that source can be reached, or "
        f"{MIRROR_ENV}=DIR repro check {reader.dir} with DIR a folder holding the archive"
    )
