"""A published claim cannot go stale unnoticed: every bundle in paper/published/ is held against
the tree (its harness tree digest, each engine's pinned source, each external harness's pin and
each of our suites' sha256), and must be what paper/published/identity.yaml says it is: `current`
(the tree makes the same setup) or `older` (with what changed). Nothing is rerun."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest
import yaml

from repro.bundle.layout.discovery import find_runs
from repro.bundle.layout.reader import BundleReader
from repro.spec.loading import load_matrix
from repro.store.images import harness_source_digest
from repro.suites.base import fixtures_beside
from repro.suites.scenarios import select_scenarios

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "paper" / "published"
BUNDLES = sorted(PUBLISHED.glob("*-bundle.tar.gz"))
SCENARIO_READABLE = {"files", "weather", "web"}  # what harness/fixtures.py reads under fixtures/


def unpack(archive: Path, into: Path) -> Path:
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    (run_dir,) = [p for p in into.iterdir() if p.is_dir()]
    return run_dir


def changes_since(bundle: Path) -> list[str]:
    """What of the bundle's setup (each run of a merged one) the tree no longer has."""
    return sorted({change for run_dir in find_runs(bundle) for change in run_changes(run_dir)})


def run_changes(run_dir: Path) -> list[str]:
    reader = BundleReader(run_dir)
    record = reader.run()
    embedded = load_matrix(reader.matrix_path(), embedded=True).matrix
    found = []
    cells = [reader.cell(cell_id) for cell_id in record.planned_cells if reader.has_cell(cell_id)]
    if any(c.cell.suite.external is None for c in cells) and record.source.harness_digest != harness_source_digest(
        ROOT
    ):
        found.append(f"harness tree {str(record.source.harness_digest)[:12]} -> {harness_source_digest(ROOT)[:12]}")
    project = ROOT / "matrix" / record.matrix.name
    if project.is_file():
        now = load_matrix(project).matrix
        found += pin_changes(embedded.engines, now.engines, "engine") + pin_changes(
            embedded.suites, now.suites, "suite"
        )
    for cell in cells:
        suite = cell.cell.suite
        if (
            suite.external is None
            and suite.source is None
            and cell.suite_sha256 != select_scenarios(suite, ROOT).sha256
        ):
            found.append(
                f"suite {suite.id} {str(cell.suite_sha256)[:12]} -> {select_scenarios(suite, ROOT).sha256[:12]}"
            )
    return sorted(set(found))


def pin_changes(before: list, after: list, what: str) -> list[str]:
    now = {item.id: item for item in after}
    return [
        f"{what} {item.id} pinned otherwise"
        for item in before
        if item.id in now and item.model_dump() != now[item.id].model_dump()
    ]


def test_every_published_bundle_is_listed() -> None:
    listed = yaml.safe_load((PUBLISHED / "identity.yaml").read_text())
    assert sorted(listed) == sorted(p.name.removesuffix("-bundle.tar.gz") for p in BUNDLES)


@pytest.mark.parametrize("archive", BUNDLES, ids=[p.name for p in BUNDLES])
def test_a_published_bundle_is_what_identity_yaml_says(archive: Path, tmp_path: Path) -> None:
    name = archive.name.removesuffix("-bundle.tar.gz")
    stated = yaml.safe_load((PUBLISHED / "identity.yaml").read_text())[name]
    changes = changes_since(unpack(archive, tmp_path))
    if stated == "current":
        assert not changes, (
            f"{name} is no longer what the tree makes ({'; '.join(changes)}): publish it again, "
            "or mark it older in identity.yaml"
        )
    else:
        assert changes, f"{name} is marked older in identity.yaml, but the tree makes its setup again: mark it current"


def test_the_fixtures_hold_only_what_scenarios_read() -> None:
    """A suite's sha256 covers every file beside its scenarios under fixtures/: a README there
    would make a documentation edit change a published suite's identity."""
    fixtures = fixtures_beside(ROOT / "scenarios")
    assert {p.name for p in fixtures.iterdir()} <= SCENARIO_READABLE, (
        "fixtures/ holds a file no scenario reads (docs belong in docs/)"
    )
