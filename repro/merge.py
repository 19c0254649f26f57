"""`repro results merge`: join the bundles of several shards (or machines) into one results folder.

Bundles are copied unchanged (their manifests still verify); `repro check` and `repro paper
render` then work on the merged folder as on one run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from repro.check import find_runs, manifest_problems
from repro.errors import BadInput
from repro.results import RunRecord


def merge(sources: list[Path], out: Path) -> list[Path]:
    runs = [run for source in sources for run in find_runs(source)]
    records = {run: RunRecord.model_validate_json((run / "run.json").read_text()) for run in runs}
    _refuse_mixed(records)
    merged = []
    seen_cells: dict[str, str] = {}
    for run, record in records.items():
        problems = manifest_problems(run)
        if problems:
            raise BadInput(f"{run}: not intact ({problems[0]}); refusing to merge it")
        for cell_id in record.planned_cells:
            if cell_id in seen_cells:
                raise BadInput(f"cell {cell_id} is in both {seen_cells[cell_id]} and {record.run_id}")
            seen_cells[cell_id] = record.run_id
        target = out / record.run_id
        if target.exists():
            raise BadInput(f"{target} exists already")
        shutil.copytree(run, target)
        merged.append(target)
    return merged


def _refuse_mixed(records: dict[Path, RunRecord]) -> None:
    kinds = {(r.matrix.sha256, r.profile) for r in records.values()}
    if len(kinds) > 1:
        described = ", ".join(f"{sha[:12]} on {profile}" for sha, profile in sorted(kinds))
        raise BadInput(f"these bundles come from different matrices or profiles ({described}); merge runs of one matrix and profile")
