"""`repro suites fetch --from-bundle RUN`: what a bundle references (repro.suites.references),
fetched from where it is pinned and admitted, verified by sha256, where `repro check` looks for it.

- another project's scenario files: each found by its sha256 in a mirror (a copy of the files as
  their authors publish them), else the suite's pinned source (cache, mirror, PyPI or git),
  unpacked, and each file the bundle lists admitted into the input cache;
- an external harness's wheel: its lock's wheels downloaded with hashes required (PyPI), the wheel
  admitted into the input cache;
- an external harness's source archive: fetched into the suite cache (a mirror, or git where the
  pin names a repository), where the check reads it.

Bytes that do not hash to the pin are refused; a source this machine cannot reach is one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from repro.bundle.layout.reader import BundleReader
from repro.bundle.records import InputReference
from repro.core.errors import ReproError
from repro.spec.loading import load_matrix
from repro.spec.matrix import Suite
from repro.store.inputs import admit_input, find_input
from repro.suites.base import Log, fixture_files, fixtures_beside
from repro.suites.references import admit_reference
from repro.suites.sources import fetch_suite, scenario_folder


class Fetched(NamedTuple):
    reference: InputReference
    said: str | None  # what was fetched, in words
    failed: str | None  # why not


def fetch_run_references(run_dir: Path, log: Log) -> list[Fetched]:
    """Every reference of one run folder, fetched against the suites of its embedded matrix."""
    reader = BundleReader(run_dir)
    run = reader.run()
    if not run.inputs:
        return []
    suites = {s.id: s for s in load_matrix(reader.matrix_path(), embedded=True).matrix.suites}
    fetched = []
    for reference in run.inputs:
        try:
            suite = suites.get(reference.suite)
            if suite is None:
                raise ReproError(f"the bundle's matrix has no suite {reference.suite}")
            fetched.append(Fetched(reference, fetch_referenced(reference, suite, log), None))
        except ReproError as error:
            fetched.append(Fetched(reference, None, str(error)))
    return fetched


def fetch_referenced(reference: InputReference, suite: Suite, log: Log) -> str:
    """Fetch one reference from its pinned source; what it did, in words (ReproError otherwise)."""
    from repro.suites.external.wheels import fetch_code, fetch_wheels, verified_wheel

    if reference.role == "suite-files":
        if all(find_input(entry.sha256) is not None for entry in reference.files):
            return f"{len(reference.files)} files found by sha256 in the input cache or a mirror"
        if suite.source is None or suite.source.sha256 != reference.sha256:
            raise ReproError(f"suite {suite.id}: the bundle's matrix pins no source {reference.sha256[:12]}")
        fetch_suite(suite.source, log=log)
        files = layout_of(scenario_folder(suite))
        admitted = admit_reference(reference, files)
        if admitted != len(reference.files):
            raise ReproError(
                f"suite {suite.id}: {len(reference.files) - admitted} of {len(reference.files)} referenced files "
                f"are not in {suite.source.describe()} as the bundle lists them"
            )
        return f"{admitted} files of {suite.source.describe()} (sha256 verified)"
    if suite.external is None or suite.external.sha256 != reference.sha256:
        raise ReproError(f"suite {suite.id}: the bundle's matrix pins no harness {reference.sha256[:12]}")
    if reference.role == "harness-wheel":
        fetch_wheels(suite.external, log=log)
        if admit_input(verified_wheel(suite.external), reference.sha256) is None:
            raise ReproError(f"{suite.external.pin}: the fetched wheel is not the one the bundle references")
        return f"the wheel {suite.external.pin} (sha256 verified)"
    fetch_code(suite.external, log=log)
    return f"the harness's archive {suite.external.pin} (sha256 verified)"


def layout_of(folder: Path) -> dict[str, Path]:
    """A fetched scenario folder's files by their path in a bundle's layout of the suite."""
    files = {
        f"scenarios/{path.relative_to(folder).as_posix()}": path
        for path in sorted(folder.glob("*/*.json"))
        if path.is_file() and not path.is_symlink()
    }
    fixtures = fixtures_beside(folder)
    files.update({f"fixtures/{path.relative_to(fixtures).as_posix()}": path for path in fixture_files(fixtures)})
    return files
