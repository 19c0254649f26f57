"""External inputs a bundle carries: the bytes no public address serves, which their licence lets
a bundle carry (repro.spec.matrix.ExternalSuite.carried: Tholos-Bench's runner archive, pinned by
sha256 and found only in a local mirror; a wheel is on PyPI and a git pin names its repository,
so neither is carried).

A run copies each such archive, verified against its pin, into `inputs/<sha256><ext>` (covered by
the manifest); `repro check` takes it from there when the suite cache and the mirrors lack it,
verified again against the pinned sha256 (a copy of other bytes is a problem, never used), at
most MAX_CARRIED_BYTES, never through a link.
"""

from __future__ import annotations

from pathlib import Path

from repro.bundle.layout.names import INPUTS_DIR
from repro.bundle.layout.reader import BundleReader
from repro.bundle.layout.writer import Bundle
from repro.core.errors import BadInput, NotAtHand
from repro.core.files import MAX_CARRIED_BYTES, sha256_file
from repro.spec.matrix import ExternalSuite
from repro.store.sources import MIRROR_ENV, admit, archive_extension, fetch_source
from repro.suites.external.wheels import fetch_code, fetched_code


def carried_name(external: ExternalSuite) -> str:
    """The carried copy's name in inputs/: the pinned sha256 and the archive's extension."""
    return f"{external.sha256}{archive_extension(external.archive or '')}"


def carry_code(bundle: Bundle, external: ExternalSuite) -> None:
    """A carried pin's archive, from the cache (verified), into the bundle; other pins carry nothing."""
    if not external.carried:
        return
    archive = fetch_source(external.source)
    if archive.stat().st_size > MAX_CARRIED_BYTES:
        raise BadInput(
            f"{external.pin}: {archive.stat().st_size} bytes, more than a bundle carries "
            f"({MAX_CARRIED_BYTES // 1024**2} MB)"
        )
    bundle.carry(carried_name(external), archive.read_bytes())


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
    if external.git is not None:
        command = "repro suites fetch MATRIX (the run's matrix, in a clone of repro; it clones the pinned commit)"
    else:
        command = f"{MIRROR_ENV}=DIR repro check {reader.dir}, with DIR a folder holding that archive"
    raise NotAtHand(
        f"{external.pin} (sha256 {external.sha256[:12]}) is neither in the suite cache nor carried by the bundle; "
        f"run: {command}"
    )
