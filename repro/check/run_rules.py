"""The run-level check rules: what run.json, the manifest and the recomputed plan must say of the
whole run (provenance, complete, manifest, plan listing, plan recomputed, host identity)."""

from __future__ import annotations

import re
from collections import Counter

from repro.bundle.evidence import RunEvidence
from repro.bundle.layout.names import CELLS_DIR, MATRIX_COPY, safe_id
from repro.core.errors import BadInput

HEX64 = re.compile(r"^[0-9a-f]{64}$")


def rule_provenance(ev: RunEvidence) -> list[str]:
    run = ev.run
    problems = []
    if not HEX64.match(run.matrix.sha256 or ""):
        problems.append("matrix file sha256 not recorded")
    if not run.source.commit:
        problems.append("project commit not recorded")
    if not run.source.tree_clean or run.source.dirty_files:
        allowed = "; the run was started with --allow-dirty, not clean-room from the start" if run.dirty_allowed else ""
        problems.append(
            f"project tree was dirty at run time ({', '.join(run.source.dirty_files[:3]) or 'unknown files'}){allowed}"
        )
    author = run.author
    if author is not None and author.commit is not None and (not author.tree_clean or author.dirty_files):
        problems.append(
            f"the author's files were dirty at run time ({', '.join(author.dirty_files[:3]) or 'unknown files'})"
        )
    return problems


def rule_run_complete(ev: RunEvidence) -> list[str]:
    run = ev.run
    problems = [] if run.status == "complete" else [f"run status is {run.status}, not complete"]
    if run.leaked_containers:
        problems.append(f"containers left behind: {', '.join(run.leaked_containers)}")
    return problems


def rule_manifest(ev: RunEvidence) -> list[str]:
    return ev.bundle.manifest_problems()


def rule_plan_listing(ev: RunEvidence) -> list[str]:
    """Every planned cell once; a cell is planned or excluded, never both; ids are safe."""
    run = ev.run
    problems = [
        f"cell {cell_id} is listed {n} times in planned_cells"
        for cell_id, n in Counter(run.planned_cells).items()
        if n > 1
    ]
    problems += [
        f"cell {cell_id} is both planned and excluded" for cell_id in set(run.planned_cells) & set(run.excluded_cells)
    ]
    problems += [
        f"cell {cell_id} has an exclusion kind but is not excluded"
        for cell_id in sorted(set(run.excluded_kinds) - set(run.excluded_cells))
    ]
    for cell_id in [*run.planned_cells, *run.excluded_cells]:
        try:
            safe_id(cell_id, "cell id")
        except BadInput as error:
            problems.append(str(error))
    problems += [f"{CELLS_DIR}/{name} is not a planned cell" for name in ev.bundle.stray_cells()]
    problems += [
        f"{CELLS_DIR}/{name}: a partial cell (an interrupted attempt's finished scenarios), not a complete one"
        for name in ev.bundle.partial_cells()
    ]
    return problems


def rule_plan_recomputed(ev: RunEvidence) -> list[str]:
    """planned_cells and excluded_cells are exactly what the embedded matrix gives for this
    profile, --only selection and shard: no cell added, dropped or moved out of the plan."""
    plan = ev.plan
    if plan is None:
        return [f"{MATRIX_COPY} missing: the plan cannot be recomputed"]
    if plan.error:
        return [plan.error]
    expected = [cell.id for cell in plan.planned]
    problems = []
    if ev.run.planned_cells != expected:
        missing = [c for c in expected if c not in ev.run.planned_cells]
        extra = [c for c in ev.run.planned_cells if c not in expected]
        problems.append(
            f"planned_cells differ from the recomputed plan (missing {missing[:2]}, not in the plan {extra[:2]})"
        )
    if set(ev.run.excluded_cells) != set(plan.excluded):
        problems.append("excluded_cells differ from the recomputed plan's exclusions")
    return problems


def rule_no_host_identity(ev: RunEvidence) -> list[str]:
    text = ev.bundle.run_text()
    return [f"host identity left in run.json: {leak}" for leak in sorted(set(ev.redactor.leaks(text)))]
