"""The run's console, without an engine: a header per cell, an overall line with time left from
the measured rate, no progress frame in a log, short labels (the full id at the header).
The clock is a stand-in (a counter the test moves), the console rich's own, writing to a buffer."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from harness.contracts import ProgressEvent
from repro.plan.planner import make_plan
from repro.run.progress import RunProgress, duration
from repro.spec.cells import Cell
from repro.spec.profiles import load_profiles
from tests.fixtures.synthetic import smoke_variant


class Clock:
    """A stand-in for time.monotonic that moves only when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def cells() -> list[Cell]:
    plan = make_plan(smoke_variant()[1], "cpu", load_profiles().get("cpu"))
    return plan.cells


def event(index: int, passed: bool = True) -> ProgressEvent:
    return ProgressEvent(
        index=index,
        total=3,
        id=f"notes-00{index}",
        passed=passed,
        failure_type=None if passed else "wrong_outcome",
        seconds=20.0,
    )


def play(progress: RunProgress, clock: Clock, run: list[Cell]) -> None:
    """Two cells of three scenarios at 20 s each; the first cell's scenarios, then the second's."""
    progress.start_run("r1", Path("results/r1"), run, {cell.id: 3 for cell in run})
    for cell in run:
        progress.start_cell(cell, 3)
        for index in (1, 2, 3):
            clock.now += 20
            progress.scenario_done(cell.id, event(index, passed=index != 2))
        progress.cell_done(cell.id, "done", "2/3 passed")
    progress.end_run("complete")


def test_a_log_gets_headers_scenario_lines_and_the_overall_line_but_no_frame() -> None:
    clock, out = Clock(), io.StringIO()
    progress = RunProgress(Console(file=out, width=100, force_terminal=False), clock=clock, overall_every_s=50)
    run = cells()
    assert len(run) == 2
    play(progress, clock, run)
    lines = out.getvalue().splitlines()
    first, second = run
    assert lines[1] == f"cell 1 of 2: {first.label} ({first.id})"
    # never cut to the width
    assert first.label == f"{first.model.id} / json_schema / synthetic" and len(lines[1]) > 100
    assert lines[2:5] == [
        "    [1/3] notes-001 PASS (20.0s)",
        "    [2/3] notes-002 FAIL wrong_outcome (20.0s)",
        "    [3/3] notes-003 PASS (20.0s)",
    ]
    # every 50 s of the fake clock
    assert "overall: 3 of 6 scenarios, 0 of 2 cells, 1m00s elapsed, about 1m00s left" in lines
    assert lines.index(f"  done {first.label}: 2/3 passed") + 1 == lines.index(
        "overall: 3 of 6 scenarios, 1 of 2 cells, 1m00s elapsed, about 1m00s left"
    )
    assert f"cell 2 of 2: {second.label} ({second.id})" in lines
    assert lines[-1] == "run complete: overall: 6 of 6 scenarios, 2 of 2 cells, 2m00s elapsed, nothing left"
    text = out.getvalue()
    assert "\x1b" not in text and "━" not in text and "\r" not in text  # no bar, no frame, no cursor movement


def test_a_terminal_gets_a_live_bar_that_leaves_no_frame_behind() -> None:
    clock, out = Clock(), io.StringIO()
    progress = RunProgress(Console(file=out, width=160, force_terminal=True, color_system=None), clock=clock)
    run = cells()
    play(progress, clock, run)
    text = out.getvalue()
    assert f"cell 1 of 2: {run[0].label}" in text and f"done {run[1].label}: 2/3 passed" in text
    assert "[1/3]" not in text  # the bar counts the scenarios instead of a line each
    assert text.rstrip().endswith("run complete: overall: 6 of 6 scenarios, 2 of 2 cells, 2m00s elapsed, nothing left")
    assert "━" not in text.rsplit("\n", 2)[-2]  # the last frame was erased (transient), not left above the last line


def test_a_cell_ended_before_its_scenarios_gets_its_header_and_the_skipped_count_as_done() -> None:
    clock, out = Clock(), io.StringIO()
    progress = RunProgress(Console(file=out, width=300, force_terminal=False), clock=clock)
    first, second = cells()
    progress.start_run("r1", Path("results/r1"), [first, second], {first.id: 3, second.id: 3})
    progress.skip_cells([first])
    progress.cell_done(second.id, "excluded", "latency gate: too slow")
    lines = out.getvalue().splitlines()
    assert f"skip {first.label} (complete and intact; {first.id})" in lines
    assert (
        f"cell 2 of 2: {second.label} ({second.id})" in lines
        and f"  excluded {second.label}: latency gate: too slow" in lines
    )
    assert lines[-1] == "overall: 6 of 6 scenarios, 2 of 2 cells, 0s elapsed, nothing left"


def test_durations_read_as_minutes_and_hours() -> None:
    assert [duration(s) for s in (0, 59.4, 60, 724, 3599, 7500)] == ["0s", "59s", "1m00s", "12m04s", "59m59s", "2h05m"]
