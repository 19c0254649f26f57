"""Inputs by reference: what a bundle records of the files it did not write, and how a check gets
them back.

A run writes into its bundle what it made and what its author wrote. Every other input (another
project's scenario files, an external harness's wheel or source archive) is recorded in run.json
`inputs` as a reference (repro.bundle.records.InputReference): its sha256, where it is published,
and for scenario files each file's path in the bundle's layout and its sha256. Its bytes stay out
of the bundle, unless a matrix suite says `carry: true` (an author's own suite, whose licence lets it
travel): then they are embedded under suites/<id>/ as our own suites' are, and the reference says
`carried`.

`repro check` and `repro verify` resolve a reference offline: the content-addressed input cache
(a run admits the files it referenced there), the suite's source as `repro suites fetch` unpacked
it, then the mirrors (repro.store.inputs), never the network; a file that is nowhere at hand makes the
cells that need it UNCHECKED (NotAtHand), naming the command that makes them checkable.
`repro suites fetch --from-bundle RUN` fetches what a bundle references from its pinned source and
admits each referenced file into the input cache (`admit_reference`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path, PurePosixPath

from repro.bundle.layout.reader import BundleReader
from repro.bundle.records import InputFile, InputReference, InputRole, RunRecord
from repro.core.config import cache_dir
from repro.core.errors import BadInput, NotAtHand
from repro.core.files import sha256_file
from repro.spec.matrix import Suite
from repro.spec.published import published_at
from repro.store.inputs import admit_input, find_input, mirror_index
from repro.store.sources import MIRROR_ENV
from repro.suites.sources import COMPLETE, suites_dir

MAX_REFERENCED_FILES = 20_000


def is_others(suite: Suite) -> bool:
    """Whether a suite's scenario files are another project's: fetched from a pinned source (ours
    and an author's own are in their repository), unless the matrix carries them (`carry: true`)."""
    return suite.source is not None and not suite.carry


def files_reference(suite: Suite, files: dict[str, Path], carried: bool) -> InputReference:
    """A suite's files (bundle layout path -> the file read) as a reference to its source."""
    assert suite.source is not None
    listed = [
        InputFile(path=path, sha256=sha256_file(source), bytes=source.stat().st_size) for path, source in files.items()
    ]
    return InputReference(
        role="suite-files",
        suite=suite.id,
        sha256=suite.source.sha256,
        published=published_at(suite.source.sha256, suite.source.describe()),
        carried=carried,
        files=sorted(listed, key=lambda f: f.path),
    )


def code_reference(suite: Suite, role: InputRole, carried: bool = False) -> InputReference:
    """An external harness's wheel or source archive as a reference."""
    assert suite.external is not None
    external = suite.external
    described = f"PyPI {external.wheel}" if external.wheel else external.source.describe()
    return InputReference(
        role=role,
        suite=suite.id,
        sha256=external.sha256,
        published=published_at(external.sha256, described),
        carried=carried,
    )


def reference_of(run: RunRecord, suite_id: str, role: InputRole) -> InputReference | None:
    return next((r for r in run.inputs if r.role == role and r.suite == suite_id), None)


def suite_root(reader: BundleReader, run: RunRecord, suite_id: str) -> Path:
    """Where a cell's suite files are read from: the bundle's own copy (suites/<id>/), or, for
    scenario files it references and does not carry, their copy resolved from the input cache or
    a mirror (NotAtHand naming the command when a file is not at hand)."""
    reference = reference_of(run, suite_id, "suite-files")
    if reference is None or reference.carried:
        return reader.suite_dir(suite_id)
    return resolved_files(reference, reader.dir)


def resolved_files(reference: InputReference, bundle: Path) -> Path:
    """The referenced files laid out as the bundle would hold them, each verified by sha256, in
    `<cache>/inputs/resolved/<digest>/` (made once; a folder without its marker is not used)."""
    if len(reference.files) > MAX_REFERENCED_FILES:
        raise BadInput(
            f"suite {reference.suite}: {len(reference.files)} referenced files (at most {MAX_REFERENCED_FILES})"
        )
    target = cache_dir() / "inputs" / "resolved" / reference.digest
    if (target / COMPLETE).is_file():
        return target
    found = {f.path: find_input(f.sha256) or in_source(reference, f.sha256) for f in reference.files}
    missing = sorted(path for path, where in found.items() if where is None)
    if missing:
        raise NotAtHand(
            f"{len(missing)} of {len(reference.files)} files of suite {reference.suite} "
            f"(published: {reference.published}; first: {missing[0][:80]}) are in neither the input cache "
            "nor a mirror; run: "
            f"{fetch_command(bundle)}, or {MIRROR_ENV}=DIR with DIR a folder that holds them"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".resolve-", dir=target.parent))
    try:
        for path, source in found.items():
            destination = work / safe_path(path)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, destination)  # type: ignore[arg-type]
        (work / COMPLETE).write_text(reference.suite + "\n")
        shutil.rmtree(target, ignore_errors=True)
        os.replace(work, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def in_source(reference: InputReference, sha256: str) -> Path | None:
    """A referenced file in its source archive as `repro suites fetch MATRIX` unpacked it into the
    suite cache (verified by its sha256 when unpacked; found here by the file's sha256)."""
    folder = suites_dir() / reference.sha256
    if not (folder / COMPLETE).is_file():
        return None
    return mirror_index(str(folder.resolve())).get(sha256)


def safe_path(path: str) -> PurePosixPath:
    """A referenced file's path inside a suite's layout (BadInput for one that leaves it)."""
    pure = PurePosixPath(path)
    if pure.is_absolute() or not pure.parts or any(part in ("", ".", "..") for part in pure.parts) or "\\" in path:
        raise BadInput(f"a referenced file's path {path[:80]!r} leaves its suite")
    return pure


def fetch_command(bundle: Path) -> str:
    return f"repro suites fetch --from-bundle {bundle} (where its pinned source can be reached)"


def admit_reference(reference: InputReference, files: dict[str, Path]) -> int:
    """Each referenced file found among `files` (bundle layout path -> a fetched copy) admitted
    into the input cache when its bytes are the referenced ones; the number admitted."""
    admitted = 0
    for entry in reference.files:
        source = files.get(entry.path)
        if source is not None and admit_input(source, entry.sha256) is not None:
            admitted += 1
    return admitted
