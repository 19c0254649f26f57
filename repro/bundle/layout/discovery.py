"""Finding runs: a run folder or a results folder of them, the latest, and one `--resume` may go on."""

from __future__ import annotations

from pathlib import Path

from repro.bundle.layout.loading import load_run
from repro.bundle.layout.names import LATEST, RUN_FILE, safe_id
from repro.bundle.provenance import source_change
from repro.bundle.records import RunRecord, SourceState
from repro.core.errors import BadInput
from repro.core.files import (
    read_regular,
)
from repro.spec.profiles import Profile


def find_runs(path: Path) -> list[Path]:
    """A run folder, or a results folder holding run folders (links are never followed)."""
    if path.is_symlink():
        raise BadInput(f"{path}: a symbolic link, not a result bundle")
    if path.is_file():
        raise BadInput(f"{path}: a file, not a result folder")
    if (path / RUN_FILE).is_file():
        return [path]
    runs = sorted(p for p in path.iterdir() if not p.is_symlink() and (p / RUN_FILE).is_file()) if path.is_dir() else []
    if not runs:
        raise BadInput(f"{path}: no result bundle here (no run.json)")
    return runs


def latest_run(results_dir: Path) -> Path:
    """The run named in results/LATEST, else the results folder itself."""
    pointer = results_dir / LATEST
    if pointer.is_file() and not pointer.is_symlink():
        return results_dir / safe_id(read_regular(pointer, 1024).decode(errors="replace").strip(), "run id")
    return results_dir


def find_resumable(
    out: Path,
    matrix_sha256: str,
    profile: str,
    shard: str | None,
    cell_ids: set[str],
    source: SourceState,
    settings: Profile,
) -> tuple[Path, RunRecord] | None:
    """The latest run of the same matrix, profile (and its settings as run: --prompt-cache), shard
    and project source that planned these cells."""
    if not out.is_dir():
        return None
    for run_dir in sorted((p for p in out.iterdir() if not p.is_symlink() and (p / RUN_FILE).is_file()), reverse=True):
        try:
            record = load_run(run_dir)
        except BadInput:
            continue
        same = record.matrix.sha256 == matrix_sha256 and record.profile == profile and record.shard == shard
        same = same and source_change(record.source, source) is None  # never mix results of two code states
        same = same and record.profile_settings == settings
        if same and cell_ids <= set(record.planned_cells):
            return run_dir, record
    return None
