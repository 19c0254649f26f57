"""A cell's files re-graded: ``scenarios.jsonl`` and ``transcripts.jsonl`` read line by line
(bounded; each bad line one problem, never an exception), and ``python -m harness regrade``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from harness.contracts import ScenarioResult, TranscriptLine
from harness.io.inputs import MAX_RECORDS_BYTES, open_text
from harness.model.scenario import Scenario, load_scenarios
from harness.regrade.grade import Replay, regrade_all
from harness.regrade.report import RegradeReport

MAX_LINE_CHARS = 16 * 1024**2


def read_records(path: Path, model: type[BaseModel], problems: list[str]) -> list[Any]:
    """The valid records of a JSON-lines file; each bad line is one problem, never an exception.
    ``InputError`` (a missing, unreadable, non-regular or oversized file) is left to the caller:
    that is bad input."""
    records = []
    with open_text(path, MAX_RECORDS_BYTES) as handle:  # a regular file within its bound (harness/io/inputs.py)
        number = 0
        while line := handle.readline(MAX_LINE_CHARS + 1):
            number += 1
            if len(line) > MAX_LINE_CHARS:
                problems.append(f"{path.name} line {number}: longer than {MAX_LINE_CHARS} characters")
                _skip_rest_of_line(handle, line)
                continue
            if line.strip():
                record = _record(line, model)
                if isinstance(record, BaseModel):
                    records.append(record)
                else:
                    problems.append(f"{path.name} line {number}: {record}")
    return records


def _skip_rest_of_line(handle: Any, line: str) -> None:
    while not line.endswith("\n") and line:
        line = handle.readline(MAX_LINE_CHARS)


def _record(line: str, model: type[BaseModel]) -> BaseModel | str:
    try:
        return model.model_validate_json(line)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in error["loc"]) or "(line)"
        return f"not a {model.__name__}: {where}: {error['msg']}"[:300]


def regrade_files(
    scenarios: list[Scenario], results_path: Path, transcripts_path: Path | None, replay: Replay | None = None
) -> RegradeReport:
    """``regrade_all`` over a cell's ``scenarios.jsonl`` and ``transcripts.jsonl``."""
    problems: list[str] = []
    results = read_records(results_path, ScenarioResult, problems)
    transcripts = read_records(transcripts_path, TranscriptLine, problems) if transcripts_path else []
    report = regrade_all(scenarios, results, transcripts, replay)
    report.problems[:0] = problems
    return report


def command(
    scenarios_path: Path, results_path: Path, transcripts_path: Path | None, replay: Replay | None = None
) -> int:
    """``python -m harness regrade``: one line per differing scenario; 1 on any difference.
    ``replay.protocol`` parses every raw reply again under that protocol, as ``repro check`` does.
    Unreadable files and bad scenario files raise (``OSError``, ``ScenarioError``): bad input."""
    report = regrade_files(load_scenarios(scenarios_path), results_path, transcripts_path, replay)
    for line in report.lines():
        print(line)
    differing = sum(not r.agrees for r in report.regrades)
    print(
        f"regrade: {len(report.regrades)} scenarios re-graded, {differing} differ, "
        f"{len(report.problems)} other problems"
    )
    return 0 if report.agrees else 1
