"""A row's repeats in the fields Local Agent Bench's repeat runner summarises
(`runners/run_platform_native_repeats.py --runs N`: mean score, standard deviation, per-task pass
counts, failure reasons), computed from the same VALID cells the tables are: `repro results repeats
RUN` prints them. A LAB suite's rows carry LAB's own verdicts and scores (docs/external-suites.md),
so a matrix with `repeats: N` gives these fields from N runs of LAB's own code; any other row gives
them from ours. The fields are ours, named after LAB's summary; how LAB's runner computes each (its
code is not at hand here) is for a comparison against it to confirm."""

from __future__ import annotations

from pydantic import BaseModel

from harness.scoring import lab_counts
from repro.report.tables import TableRow


class RepeatSummary(BaseModel):
    row: str  # the row's key: model / engine / protocol / suite
    runs: int  # repeats of the row
    tasks: int  # scenarios (tasks) of one run
    passed_per_run: list[int]  # tasks passed in run i (every task's i-th outcome)
    mean_passed: float
    sd_passed: float | None  # sample standard deviation over the runs (None for one run)
    mean_score: float | None  # mean per-task score (partial credit; LAB's `score` for a LAB suite)
    task_passes: dict[str, int]  # task id -> runs it passed in
    failure_reasons: dict[str, int]  # LAB reason code -> failed task runs
    failure_types: dict[str, int]  # our failure type -> failed task runs


def repeat_summary(row: TableRow) -> RepeatSummary:
    spread = row.spread
    return RepeatSummary(
        row=row.key,
        runs=row.repeats,
        tasks=len(row.scenarios),
        passed_per_run=spread.counts,
        mean_passed=round(spread.mean, 4),
        sd_passed=None if spread.sd is None else round(spread.sd, 4),
        mean_score=row.partial_score,
        task_passes={task: sum(outcomes) for task, outcomes in sorted(row.scenarios.items())},
        failure_reasons=lab_counts(row.failure_types),
        failure_types=dict(sorted(row.failure_types.items())),
    )


def repeat_lines(summary: RepeatSummary) -> list[str]:
    """The summary as text, a line a fact, then one line per task."""
    sd = "-" if summary.sd_passed is None else f"{summary.sd_passed:.2f}"
    score = "-" if summary.mean_score is None else f"{summary.mean_score:.3f}"
    reasons = ", ".join(f"{code} {n}" for code, n in summary.failure_reasons.items()) or "none"
    lines = [
        f"{summary.row}: {summary.runs} run(s) of {summary.tasks} task(s)",
        f"  passed per run: {summary.passed_per_run}; mean {summary.mean_passed:.2f}, sd {sd}; mean score {score}",
        f"  failure reasons: {reasons}",
    ]
    return lines + [f"  {task}: {passes}/{summary.runs}" for task, passes in summary.task_passes.items()]
