"""`repro results repeats`: a row's repeats in the fields Local Agent Bench's repeat runner
summarises (runs, tasks passed per run with their mean and sd, the mean score, each task's passes,
the failure reasons as LAB's codes), from the published smoke bundle and from a row of three runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repro.__main__ import main
from repro.report.aggregate import collect
from repro.report.repeats import repeat_lines, repeat_summary
from repro.rerun.archive import bundle_folder
from tests.rerun.conftest import SMOKE


@pytest.fixture(scope="module")
def smoke_rows(tmp_path_factory):
    return collect([bundle_folder(SMOKE, tmp_path_factory.mktemp("smoke"))]).rows


def test_one_run_is_its_own_mean_with_no_sd(smoke_rows) -> None:
    row = next(r for r in smoke_rows if r.passed > 0)
    summary = repeat_summary(row)
    assert summary.runs == 1 and summary.passed_per_run == [row.passed] and summary.sd_passed is None
    assert sum(summary.task_passes.values()) == row.passed and summary.tasks == row.total
    assert sum(summary.failure_reasons.values()) == row.total - row.passed


def test_three_runs_give_labs_fields(smoke_rows) -> None:
    row = smoke_rows[0].model_copy(
        update={
            "scenarios": {"a": [True, True, False], "b": [False, False, False], "c": [True, False, True]},
            "failure_types": {"invalid_syntax": 3, "text_tool_call": 1, "wrong_outcome": 1},
        }
    )
    summary = repeat_summary(row)
    assert summary.passed_per_run == [2, 1, 1] and summary.mean_passed == pytest.approx(4 / 3, abs=1e-4)
    assert summary.sd_passed == pytest.approx(0.5774, abs=1e-4)
    assert summary.task_passes == {"a": 2, "b": 0, "c": 2}
    assert summary.failure_reasons == {"ASSERTION_FAILED": 1, "INVALID_TOOL_SYNTAX": 4}
    assert "  a: 2/3" in repeat_lines(summary)


def test_the_command_prints_a_json_line_per_row(tmp_path: Path, capsys) -> None:
    run_dir = bundle_folder(SMOKE, tmp_path)
    assert main(["results", "repeats", str(run_dir), "--json"]) in (0, None)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines and {"runs", "passed_per_run", "sd_passed", "task_passes", "failure_reasons"} <= set(lines[0])
