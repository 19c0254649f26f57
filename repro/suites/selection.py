"""Scenario suites as the orchestrator sees them: files in `<folder>/<category>/<id>.json`.

The orchestrator knows only this layout, never what a scenario holds: it selects ids, hashes
the selected files (so a bundle records exactly which scenario bytes were run) and hands the
folder and the ids to the harness container.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic import BaseModel

from repro.core.config import PROJECT_ROOT
from repro.core.errors import BadInput
from repro.core.files import sha256_file
from repro.spec.matrix import Suite


class SuiteSelection(BaseModel):
    folder: Path
    ids: list[str]
    categories: dict[str, str]  # id -> category
    sha256: str
    external: str | None = None  # the adapter of an external suite (repro.suites.external); None for scenario files


def select(suite: Suite, root: Path = PROJECT_ROOT) -> SuiteSelection:
    if suite.external is not None:
        from repro.suites.external.cells import external_selection

        return external_selection(suite)
    if suite.source is not None:
        from repro.suites.sources import scenario_folder

        folder = scenario_folder(suite)
    else:
        folder = (root / suite.path).resolve()
    if not folder.is_dir():
        raise BadInput(f"suite {suite.id}: scenario folder {suite.path} does not exist")
    files = sorted(folder.glob("*/*.json"), key=lambda p: (p.parent.name, p.stem))
    if suite.categories:
        files = [f for f in files if f.parent.name in suite.categories]
    if suite.ids:
        missing = sorted(set(suite.ids) - {f.stem for f in files})
        if missing:
            raise BadInput(f"suite {suite.id}: unknown scenario ids {', '.join(missing)}")
        files = [f for f in files if f.stem in suite.ids]
    if suite.per_category:
        files = _first_per_category(files, suite.per_category)
    if not files:
        raise BadInput(f"suite {suite.id}: no scenario selected from {suite.path}")
    digest = hashlib.sha256()
    for path in files:
        digest.update(f"{path.relative_to(folder).as_posix()}\0{sha256_file(path)}\n".encode())
    fixtures = fixtures_beside(folder)
    for path in fixture_files(fixtures):
        digest.update(f"fixtures/{path.relative_to(fixtures).as_posix()}\0{sha256_file(path)}\n".encode())
    return SuiteSelection(
        folder=folder,
        ids=[f.stem for f in files],
        categories={f.stem: f.parent.name for f in files},
        sha256=digest.hexdigest(),
    )


def fixtures_beside(folder: Path) -> Path:
    """The shared fixtures the harness mounts beside a suite's folder."""
    return folder.parent / "fixtures"


def fixture_files(fixtures: Path) -> list[Path]:
    """The regular files under a fixtures folder, sorted (links are never followed)."""
    return sorted(p for p in fixtures.rglob("*") if p.is_file() and not p.is_symlink()) if fixtures.is_dir() else []


def _first_per_category(files: list[Path], count: int) -> list[Path]:
    taken: dict[str, int] = {}
    chosen = []
    for path in files:
        if taken.get(path.parent.name, 0) < count:
            chosen.append(path)
            taken[path.parent.name] = taken.get(path.parent.name, 0) + 1
    return chosen
