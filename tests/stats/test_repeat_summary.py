"""`repro results repeats`: a row's repeats in the fields Local Agent Bench's repeat runner writes
(runs_completed, total_scores with their mean, sample sd, min and max; per task runs, mean_score,
stdev_score, pass_count at 0.9, failure_reasons with PASS), computed as its summary computes them,
then ours; from the published smoke bundle and from a row of three runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.contracts import ScenarioResult
from repro.__main__ import main
from repro.report.aggregate import collect_with_cells
from repro.report.repeats import repeat_lines, repeat_summary, runner_fields
from repro.rerun.archive import bundle_folder
from tests.rerun.conftest import SMOKE


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    return collect_with_cells([bundle_folder(SMOKE, tmp_path_factory.mktemp("smoke"))])


def test_one_run_is_its_own_mean_with_no_sd(smoke) -> None:
    tables, cells = smoke
    row = next(r for r in tables.rows if r.passed > 0)
    [cell] = cells[row.key]
    summary = repeat_summary(row, [cell.results])
    assert summary.runs_completed == 1 and summary.stdev_total == 0.0 and summary.sd_passed is None
    assert summary.total_scores == [round(sum(r.partial_score or 0.0 for r in cell.results), 4)]
    assert summary.passed_per_run == [row.passed] and sum(summary.task_passes.values()) == row.passed
    assert sum(t.failure_reasons.get("PASS", 0) for t in summary.per_task.values()) == row.passed
    assert sum(summary.failure_reasons.values()) == row.total - row.passed


def result(task: str, score: float, error: str | None = None, failure: str | None = None) -> ScenarioResult:
    passed = error is None and failure is None
    fields = {"id": task, "category": "c", "passed": passed, "status": "done", "partial_score": score}
    empty = {"checks_total": 0, "failed_checks": [], "steps": 0, "seconds": 0.0, "tokens_in": 0, "tokens_out": 0}
    rest = {**empty, "engine_timings": [], "invalid_steps": 0, "engine_fault": False, "failure_evidence": None}
    return ScenarioResult(**fields, **rest, error=error, failure_type=failure)  # type: ignore[arg-type]


def test_three_runs_give_the_runners_fields_as_it_computes_them() -> None:
    runs = [
        [result("a", 1.0), result("b", 0.25, "INVALID_TOOL_SYNTAX", "invalid_syntax")],
        [result("a", 1.0), result("b", 0.5, "TOOL_EXECUTION_FAILED", "wrong_outcome")],
        [result("a", 0.75, "step limit", "step_limit"), result("b", 0.0, "MARTIAN", "step_limit")],
    ]
    fields = runner_fields(runs)
    assert fields["runs_completed"] == 3 and fields["total_scores"] == [1.25, 1.5, 0.75]
    assert fields["mean_total"] == pytest.approx(7 / 6, abs=1e-4)
    assert fields["stdev_total"] == pytest.approx(0.3819, abs=1e-4)  # the sample sd, n - 1
    assert (fields["min_total"], fields["max_total"]) == (0.75, 1.5)
    a, b = fields["per_task"]["a"], fields["per_task"]["b"]
    assert (a.runs, a.pass_count, a.mean_score) == (3, 2, pytest.approx(0.9167, abs=1e-4))
    assert a.failure_reasons == {"PASS": 2, "UNKNOWN_FAILURE": 1}  # ours (step_limit) as LAB's code
    assert b.failure_reasons == {"INVALID_TOOL_SYNTAX": 1, "TOOL_EXECUTION_FAILED": 1, "UNKNOWN_FAILURE": 1}
    assert b.stdev_score == pytest.approx(0.25, abs=1e-4) and b.pass_count == 0


def test_the_command_prints_a_json_line_per_row(tmp_path: Path, capsys) -> None:
    run_dir = bundle_folder(SMOKE, tmp_path)
    assert main(["results", "repeats", str(run_dir), "--json"]) in (0, None)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    runner = {"runs_completed", "total_scores", "mean_total", "stdev_total", "min_total", "max_total", "per_task"}
    assert lines and runner | {"passed_per_run", "task_passes"} <= set(lines[0])
    assert main(["results", "repeats", str(run_dir)]) in (0, None)
    text = capsys.readouterr().out
    assert " runs, mean=" in text and ": pass " in text


def test_a_row_of_repeats_prints_the_runners_lines(smoke) -> None:
    tables, cells = smoke
    row = tables.rows[0]
    lines = repeat_lines(repeat_summary(row, [cells[row.key][0].results]))
    assert lines[0].startswith(f"{row.key}: 1 runs, mean=") and lines[1].startswith("- ")
