"""A row's repeats in the fields Local Agent Bench's repeat runner writes
(`runners/run_platform_native_repeats.py --runs N`, its summary file), computed from the same VALID
cells the tables are: `repro results repeats RUN` prints them. A LAB suite's rows carry LAB's own
scores and reasons (docs/external-suites.md), so a matrix with `repeats: N` gives these fields from N
runs of LAB's own code; any other row gives them from ours (our partial score, our failure types as
LAB's codes).

The runner's fields, computed as its summary computes them (docs/external-suites.md states each):
`runs_completed`; `total_scores`, each run's sum of task scores; `mean_total`, `stdev_total` (the
sample standard deviation, 0 below two runs), `min_total`, `max_total`; and per task `runs`,
`mean_score`, `stdev_score`, `pass_count` (runs scoring 0.9 or more) and `failure_reasons` (runs per
reason, PASS among them). Its `max_output_cutoffs` (final answers that say the output limit cut them)
is not given: our records keep no final answer outside the transcript. Ours beside them: tasks passed
per run with their mean and sd, each task's passes, our failure types."""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING

from pydantic import BaseModel

from harness.contracts import ScenarioResult
from harness.scoring import lab_code, lab_counts
from repro.report.tables import TableRow
from repro.suites.external.lab_raw import LAB_REASONS

if TYPE_CHECKING:
    from repro.report.aggregate import ValidCell

PASS = "PASS"
PASS_SCORE = 0.9  # the runner's pass_count threshold


class TaskRepeats(BaseModel):
    runs: int
    mean_score: float
    stdev_score: float
    pass_count: int
    failure_reasons: dict[str, int]


class RepeatSummary(BaseModel):
    row: str  # the row's key: model / engine / protocol / suite
    # LAB's repeat runner's fields
    runs_completed: int
    total_scores: list[float]
    mean_total: float
    stdev_total: float
    min_total: float
    max_total: float
    per_task: dict[str, TaskRepeats]
    # ours
    tasks: int  # scenarios (tasks) of one run
    passed_per_run: list[int]  # tasks passed in run i (every task's i-th outcome)
    mean_passed: float
    sd_passed: float | None  # sample standard deviation over the runs (None for one run)
    task_passes: dict[str, int]  # task id -> runs it passed in
    failure_reasons: dict[str, int]  # LAB reason code -> failed task runs
    failure_types: dict[str, int]  # our failure type -> failed task runs


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def stdev(values: list[float]) -> float:
    """The sample standard deviation, 0 below two values (as LAB's runner computes it)."""
    if len(values) < 2:
        return 0.0
    centre = mean(values)
    return math.sqrt(sum((v - centre) ** 2 for v in values) / (len(values) - 1))


def reason(result: ScenarioResult) -> str:
    """The task's reason as LAB's code: PASS; LAB's own code where the cell kept it (a LAB suite's
    `error`); else our failure type's code."""
    if result.passed:
        return PASS
    if result.error in LAB_REASONS:
        return str(result.error)
    return lab_code(result.failure_type) or "UNKNOWN_FAILURE"


def runner_fields(runs: list[list[ScenarioResult]]) -> dict[str, object]:
    """LAB's repeat runner's summary fields from the runs' task results (each run its tasks)."""
    totals = [sum(r.partial_score or 0.0 for r in run) for run in runs]
    per_task: dict[str, TaskRepeats] = {}
    for task in dict.fromkeys(r.id for run in runs for r in run):
        found = [r for run in runs for r in run if r.id == task]
        scores = [r.partial_score or 0.0 for r in found]
        per_task[task] = TaskRepeats(
            runs=len(found),
            mean_score=round(mean(scores), 4),
            stdev_score=round(stdev(scores), 4),
            pass_count=sum(s >= PASS_SCORE for s in scores),
            failure_reasons=dict(Counter(reason(r) for r in found)),
        )
    return {
        "runs_completed": len(runs),
        "total_scores": [round(t, 4) for t in totals],
        "mean_total": round(mean(totals), 4),
        "stdev_total": round(stdev(totals), 4),
        "min_total": round(min(totals), 4) if totals else 0.0,
        "max_total": round(max(totals), 4) if totals else 0.0,
        "per_task": per_task,
    }


def repeat_runs(cells: list[ValidCell]) -> list[list[ScenarioResult]]:
    """Each repeat's task results, in repeat order (a repeat's cells: every part of the suite)."""
    runs: dict[int, list[ScenarioResult]] = {}
    for cell in cells:
        runs.setdefault(cell.record.cell.repeat, []).extend(cell.results)
    return [runs[repeat] for repeat in sorted(runs)]


def repeat_summary(row: TableRow, runs: list[list[ScenarioResult]]) -> RepeatSummary:
    """The row's summary; `runs` holds each repeat's task results (its cells' results, all parts)."""
    spread = row.spread
    return RepeatSummary(
        row=row.key,
        **runner_fields(runs),  # type: ignore[arg-type]
        tasks=len(row.scenarios),
        passed_per_run=spread.counts,
        mean_passed=round(spread.mean, 4),
        sd_passed=None if spread.sd is None else round(spread.sd, 4),
        task_passes={task: sum(outcomes) for task, outcomes in sorted(row.scenarios.items())},
        failure_reasons=lab_counts(row.failure_types),
        failure_types=dict(sorted(row.failure_types.items())),
    )


def repeat_lines(summary: RepeatSummary) -> list[str]:
    """The summary as text: LAB's runner's summary line, then one line per task as it prints them,
    then ours."""
    sd = "-" if summary.sd_passed is None else f"{summary.sd_passed:.2f}"
    lines = [
        f"{summary.row}: {summary.runs_completed} runs, mean={summary.mean_total:.2f}, "
        f"stdev={summary.stdev_total:.2f}, range={summary.min_total:.1f}-{summary.max_total:.1f}",
    ]
    lines += [
        f"- {task}: pass {t.pass_count}/{t.runs}, mean={t.mean_score:.2f}, reasons={t.failure_reasons}"
        for task, t in summary.per_task.items()
    ]
    return lines + [f"  passed per run: {summary.passed_per_run}; mean {summary.mean_passed:.2f}, sd {sd}"]
